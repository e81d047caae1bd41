"""Bash: run one shell command in the working directory, inside the OS sandbox when there is one."""

from __future__ import annotations

import codecs
import os
import shutil
from collections.abc import Mapping, Sequence

from pydantic import Field

from ..core.environment import scrubbed_environment
from ..core.errors import ToolError
from ..core.processes import group_alive, may_have_left_processes, new_tag, reap_adopted
from ..core.subprocesses import Command, Finished, environment_with_tag, exit_signal_name, run_captured
from .base import Tool, ToolAnswer, ToolContext, ToolInput
from .responses import bash_response

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000


def sanitized_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without provider credentials and other variables that look like secrets."""
    return scrubbed_environment(base)


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
        description="What the command does, in 5-10 words of active voice (for example 'List the test files').",
    )
    run_in_background: bool = Field(
        default=False,
        description="Not supported for subagents: commands always run in the foreground.",
    )
    dangerously_disable_sandbox: bool = Field(
        default=False,
        alias="dangerouslyDisableSandbox",
        description="Run this command outside the sandbox. Only when the sandbox blocked something the command "
        "needs; the command then needs the usual permission, and the settings may forbid it.",
    )


BASH_DESCRIPTION = f"""Runs a command with bash and returns what it printed (stdout, then stderr).

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
- Where the server runs commands in a sandbox, they can write only inside the working directory and a private \
temporary directory, and reach only the network hosts the settings allow; the result says when the sandbox \
blocked something. Set dangerouslyDisableSandbox only when that is what stops a command you need.
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
    output = _Output()
    sandbox = ctx.sandbox
    if sandbox is not None:
        placement = sandbox.placement(args.command, leave_requested=args.dangerously_disable_sandbox)
        if placement.refusal:
            raise ToolError(placement.refusal)
        if placement.sandboxed:
            async with sandbox.wrap(args.command, env=ctx.env, cwd=ctx.cwd) as wrapped:
                command = Command(
                    argv=wrapped.argv,
                    cwd=ctx.cwd,
                    env=wrapped.env,
                    what="the sandbox (bwrap)",
                    pass_fds=wrapped.pass_fds,
                )
                finished = await _run(command, output, timeout_ms)
                notes = await wrapped.conclude(output.text_for_notes(), failed=_failed(finished))
            return _report(finished, output, timeout_ms, notes)
    tag = new_tag()
    command = Command(
        argv=[_shell(), "-c", args.command],
        cwd=ctx.cwd,
        env=environment_with_tag(ctx.env, tag),
        tag=tag,
        what="the shell",
    )
    finished = await _run(command, output, timeout_ms)
    # What the command left running (`cmd &`, `setsid cmd`) lives until the task stops or the server exits.
    if may_have_left_processes(tag):
        ctx.processes.tags.add(tag)
    if group_alive(finished.pid):
        ctx.processes.ids.add(finished.pid)
    reap_adopted()
    return _report(finished, output, timeout_ms)


class _Output:
    def __init__(self) -> None:
        self.stdout = _TextCollector(MAX_OUTPUT_CHARS)
        self.stderr = _TextCollector(MAX_OUTPUT_CHARS)

    def finish(self) -> None:
        self.stdout.finish()
        self.stderr.finish()

    def text_for_notes(self) -> str:
        return f"{self.stdout.last(4000)}\n{self.stderr.last(4000)}"


async def _run(command: Command, output: _Output, timeout_ms: int) -> Finished:
    finished = await run_captured(command, stdout=output.stdout, stderr=output.stderr, time_limit=timeout_ms / 1000)
    output.finish()
    return finished


def _failed(finished: Finished) -> bool:
    return finished.timed_out or finished.returncode != 0


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


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


def _report(finished: Finished, output: _Output, timeout_ms: int, notes: Sequence[str] = ()) -> str:
    text_out = _combined_output([output.stdout, output.stderr], MAX_OUTPUT_CHARS)
    lines: list[str] = list(notes)
    if finished.output_abandoned:
        lines.append(
            "(A background process kept the output open after the command finished; what it printed later is "
            "not shown. Redirect a background job's output to a file.)"
        )
    failure = None
    if finished.timed_out:
        failure = f"Command timed out after {timeout_ms} ms"
    elif finished.returncode is not None and finished.returncode < 0:
        failure = f"Command was killed by signal {exit_signal_name(finished.returncode)}"
    elif finished.returncode:
        failure = f"Exit code {finished.returncode}"
    text = "\n".join(part for part in (text_out, *lines, failure) if part)
    if failure:
        raise ToolError(text)
    return ToolAnswer(text or "(Command completed with no output)", lambda: bash_response(text_out))


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
