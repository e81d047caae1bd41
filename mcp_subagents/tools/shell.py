"""Bash: run one shell command in the working directory, and the environment it runs with."""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, Process
from pydantic import Field

from ..errors import ToolError
from .base import Tool, ToolContext, ToolInput

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
KILL_GRACE_SECONDS = 1.0
"""Between SIGTERM and SIGKILL."""
OUTPUT_DRAIN_GRACE_SECONDS = 1.0
"""How long background processes that hold the output pipes open may delay the result after the shell exits."""

_SECRET_NAMES = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"})
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
_OWN_PREFIX = "MCP_SUBAGENTS_"
_OWN_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def sanitized_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without provider credentials and other variables that look like secrets."""
    return {name: value for name, value in base.items() if not _looks_secret(name)}


def _looks_secret(name: str) -> bool:
    upper = name.upper()
    if upper in _SECRET_NAMES or upper.endswith(_SECRET_SUFFIXES):
        return True
    return upper.startswith(_OWN_PREFIX) and any(word in upper for word in _OWN_SECRET_WORDS)


class BashInput(ToolInput):
    command: str = Field(description="The command to execute")
    timeout: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_MS,
        description=f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})",
    )
    description: str | None = Field(
        default=None,
        description="Clear, concise description of what this command does in 5-10 words, in active voice.",
    )
    run_in_background: bool = Field(
        default=False,
        description="Not supported for subagents: commands always run in the foreground.",
    )


BASH_DESCRIPTION = f"""Executes a bash command and returns its output (stdout, then stderr).

- Each call runs in a fresh shell started in the working directory: `cd`, variables and other shell state do not \
carry over to the next call. Chain dependent steps in one command with `&&`, or use absolute paths.
- Quote paths that contain spaces: cd "path with spaces/file.txt".
- Timeout: {DEFAULT_TIMEOUT_MS} ms by default, at most {MAX_TIMEOUT_MS} ms (the timeout parameter). On timeout \
the command and every process it started are killed, and the output so far is returned.
- Output is cut when longer than {MAX_OUTPUT_CHARS} characters (the middle is dropped). A non-zero exit code is \
reported as an error together with the output.
- Standard input is empty: interactive commands (editors, prompts, pagers, `git rebase -i`) cannot be used; pass \
flags that avoid prompts.
- run_in_background is not supported. A background job (`&`) should redirect its output to a file, or the \
result will not show what it prints after the command ends.
- Prefer the dedicated tools over shell equivalents: Glob (not find or ls -R), Grep (not grep or rg), Read (not \
cat, head or tail), Edit (not sed or awk), Write (not echo > file).
- Independent commands can be sent as several Bash calls in one response; for dependent ones use `&&`, or `;` \
when later steps should run even if earlier ones fail."""


async def _run_bash(ctx: ToolContext, args: BashInput) -> str:
    if args.run_in_background:
        raise ToolError(
            "Background shells are not supported for subagents. Run the command in the foreground; give a "
            f"timeout (up to {MAX_TIMEOUT_MS} ms) if it takes long."
        )
    timeout_ms = args.timeout or DEFAULT_TIMEOUT_MS
    process = await _spawn(ctx, args.command)
    try:
        outcome = await _supervise(process, timeout_ms / 1000)
    except BaseException:
        # Cancelled (TaskStop, a deadline) or failed: nothing the command started may outlive the call.
        with anyio.CancelScope(shield=True):
            await _terminate_group(process)
            await process.aclose()
        raise
    with anyio.CancelScope(shield=True):
        await process.aclose()
    if _group_alive(process.pid):
        ctx.processes.ids.add(process.pid)
    return _report(outcome, timeout_ms)


def _group_alive(group_id: int) -> bool:
    try:
        os.killpg(group_id, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _spawn(ctx: ToolContext, command: str) -> Process:
    started: list[Process] = []
    # Shielded: cancelled mid-spawn, asyncio would kill the shell alone and orphan what it had already started.
    with anyio.CancelScope(shield=True):
        try:
            started.append(
                await anyio.open_process(
                    [_shell(), "-c", command],
                    cwd=ctx.cwd,
                    env=dict(ctx.env),
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        except OSError as exc:
            raise ToolError(f"Could not start the shell: {exc}") from None
    return started[0]


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


@dataclass(slots=True, kw_only=True)
class _Outcome:
    stdout: _TextCollector
    stderr: _TextCollector
    returncode: int | None = None
    timed_out: bool = False
    output_abandoned: bool = False


async def _supervise(process: Process, timeout_seconds: float) -> _Outcome:
    outcome = _Outcome(stdout=_TextCollector(MAX_OUTPUT_CHARS), stderr=_TextCollector(MAX_OUTPUT_CHARS))
    drained = anyio.Event()

    async def drain_both() -> None:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_collect, process.stdout, outcome.stdout)
            readers.start_soon(_collect, process.stderr, outcome.stderr)
        drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(drain_both)
        with anyio.move_on_after(timeout_seconds) as deadline:
            outcome.returncode = await process.wait()
        if deadline.cancelled_caught:
            outcome.timed_out = True
            await _terminate_group(process)
        with anyio.move_on_after(OUTPUT_DRAIN_GRACE_SECONDS) as grace:
            await drained.wait()
        if grace.cancelled_caught:
            outcome.output_abandoned = True
            group.cancel_scope.cancel()
    outcome.stdout.finish()
    outcome.stderr.finish()
    return outcome


async def _collect(stream: ByteReceiveStream | None, collector: _TextCollector) -> None:
    if stream is None:
        return
    async for chunk in stream:
        collector.add(chunk)


async def _terminate_group(process: Process) -> None:
    """SIGTERM the command's process group; once the shell is gone (or the grace is over), SIGKILL the rest."""
    group_id = process.pid  # the shell leads its own session, so its pid is the group id
    _signal_group(group_id, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_SECONDS):
        await process.wait()
    _signal_group(group_id, signal.SIGKILL)
    await process.wait()


def _signal_group(group_id: int, signum: signal.Signals) -> None:
    try:
        os.killpg(group_id, signum)
    except ProcessLookupError:
        pass


class _TextCollector:
    """Decodes a byte stream, keeping only its first and last `keep` characters and its length."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head = ""
        self._tail = ""
        self.total = 0

    def add(self, data: bytes | str, *, final: bool = False) -> None:
        text = data if isinstance(data, str) else self._decoder.decode(data, final)
        self.total += len(text)
        if len(self._head) < self._keep:
            self._head += text[: self._keep - len(self._head)]
        self._tail = (self._tail + text)[-self._keep :]

    def finish(self) -> None:
        self.add(b"", final=True)

    def first(self, count: int) -> str:
        return self._head[:count]

    def last(self, count: int) -> str:
        return self._tail[-count:] if count > 0 else ""


def _report(outcome: _Outcome, timeout_ms: int) -> str:
    output = _combined_output([outcome.stdout, outcome.stderr], MAX_OUTPUT_CHARS)
    notes: list[str] = []
    if outcome.output_abandoned:
        notes.append(
            "(A background process kept the output open after the command finished; what it printed later is "
            "not shown. Redirect a background job's output to a file.)"
        )
    failure = None
    if outcome.timed_out:
        failure = f"Command timed out after {timeout_ms} ms"
    elif outcome.returncode is not None and outcome.returncode < 0:
        failure = f"Command was killed by signal {signal.Signals(-outcome.returncode).name}"
    elif outcome.returncode:
        failure = f"Exit code {outcome.returncode}"
    text = "\n".join(part for part in (output, *notes, failure) if part)
    if failure:
        raise ToolError(text)
    return text or "(Command completed with no output)"


def _combined_output(streams: Sequence[_TextCollector], limit: int) -> str:
    """stdout then stderr (a newline between them); past `limit` characters the middle is cut."""
    pieces = [stream for stream in streams if stream.total]
    segments: list[_TextCollector] = []
    for index, stream in enumerate(pieces):
        segments.append(stream)
        if index < len(pieces) - 1 and stream.last(1) != "\n":
            separator = _TextCollector(1)
            separator.add("\n")
            segments.append(separator)
    total = sum(segment.total for segment in segments)
    if total <= limit:
        return "".join(segment.first(segment.total) for segment in segments).rstrip("\n")
    head = _first(segments, limit // 2)
    tail = _last(segments, limit - limit // 2)
    cut = total - len(head) - len(tail)
    return f"{head}\n\n... [{cut} characters of output cut] ...\n\n{tail}".rstrip("\n")


def _first(segments: Sequence[_TextCollector], count: int) -> str:
    taken: list[str] = []
    for segment in segments:
        if count <= 0:
            break
        piece = segment.first(min(count, segment.total))
        taken.append(piece)
        count -= len(piece)
    return "".join(taken)


def _last(segments: Sequence[_TextCollector], count: int) -> str:
    taken: list[str] = []
    for segment in reversed(segments):
        if count <= 0:
            break
        piece = segment.last(min(count, segment.total))
        taken.append(piece)
        count -= len(piece)
    return "".join(reversed(taken))


BASH = Tool(name="Bash", description=BASH_DESCRIPTION, input_model=BashInput, run=_run_bash)
