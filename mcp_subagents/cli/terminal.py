"""What `run` and `serve` show a person at a terminal: a live status line, the permission questions of the task,
asked one at a time, results written for reading, and a server that says what it is waiting for and stops on
Ctrl-C. What the model wrote (tool names, its answer, its progress lines, the calls it asks about) reaches the
terminal inert (`render.inert`)."""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import anyio

from ..agent.loop import ModelResponded, ToolFinished, ToolStarted, TurnStarted
from ..core.errors import QuestionClosedError
from ..models.pricing import format_usd
from ..permissions.asking import CHOICES, Answer, Choice, OpenQuestion
from ..render import denial_notes, describe_event, failure_message
from ..render.envelopes import stall_label
from ..render.inert import inert
from ..render.questions import always_text, permission_message
from ..render.status import answer_line
from ..tasks.outcome import TaskOutcome
from ..tasks.record import QuestionAnswered, TaskEvent, TaskRecord
from ..tasks.stalls import stall_of

if TYPE_CHECKING:
    from ..runtime.service import Subagents

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.25
"""Seconds between redraws of the status line (the elapsed time and the spinner move on their own)."""

VIA_TERMINAL = "the terminal"
KEYS: dict[str, Choice] = {"a": "allow", "A": "always", "d": "deny", "D": "deny"}
"""One-letter answers at the prompt; the whole words (any case) are taken too."""
ANSWERED = {"allow": "Allowed once.", "always": "Always allowed.", "deny": "Denied: the agent is told you refused it."}

SERVE_NOTICE = (
    "mcp-subagents is serving MCP on stdin/stdout and waits for an MCP host to talk to it.\n"
    "Hosts (Claude Code, Claude Desktop, Cursor, VS Code) start this command themselves: add it to the host's MCP "
    "configuration (see the README).\n"
    'To try an agent from this terminal instead: mcp-subagents run AGENT "PROMPT". Press Ctrl-C to stop.'
)


def tokens_text(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


class StatusLine:
    """One line on a terminal that follows the task: turn, current tool, tokens, cost, elapsed time."""

    def __init__(self, record: TaskRecord, out: TextIO, *, stall_after: float = 0.0) -> None:
        """`stall_after`: `--stall-after`, after which a silent task shows `stalled` (0: only a loop shows)."""
        self._record = record
        self._out = out
        self._stall_after = stall_after
        self._tool = ""
        self._frame = 0
        self._shown = False
        self._paused = False

    async def on_event(self, event: TaskEvent) -> None:
        if isinstance(event, ToolStarted):
            self._tool = event.call.name
        elif isinstance(event, ToolFinished | TurnStarted):
            self._tool = ""
        elif isinstance(event, ModelResponded) and event.message.tool_calls:
            self._tool = ", ".join(call.name for call in event.message.tool_calls)
        self.draw()

    async def keep_drawing(self) -> None:
        while True:
            await anyio.sleep(TICK)
            self.draw()

    def text(self) -> str:
        record = self._record
        progress = record.progress
        usage = progress.usage
        parts = [f"{SPINNER[self._frame % len(SPINNER)]} {inert(record.agent, one_line=True)}"]
        if progress.turn == 0:
            parts.append("starting")
        else:
            parts.append(f"turn {progress.turn}/{progress.max_turns}")
            if self._tool:
                parts.append(inert(self._tool, one_line=True))
            parts.append(f"{tokens_text(usage.total_tokens)} tokens")
            cost = record.cost_usd()
            if cost is not None:
                parts.append(format_usd(cost))
        if record.resources.questions.waiting():
            parts.append("waiting for you")
        elif (stall := stall_of(record, after=self._stall_after)) is not None:
            parts.append(stall_label(stall))
        parts.append(f"{progress.elapsed():.0f} s")
        return " · ".join(parts)

    def draw(self) -> None:
        if self._paused:
            return
        self._frame += 1
        width = _columns(self._out)
        line = self.text()
        if len(line) > width - 1:
            line = line[: width - 2] + "…"
        self._out.write(f"\r\x1b[2K{line}")
        self._out.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._out.write("\r\x1b[2K")
            self._out.flush()
            self._shown = False

    @contextmanager
    def paused(self) -> Generator[None]:
        """No redraw while the block runs (a question is asked on the terminal)."""
        self.clear()
        self._paused = True
        try:
            yield
        finally:
            self._paused = False


class PlainProgress:
    """For a log or a pipe: one line per turn and tool call, as in the task's output file."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def on_event(self, event: TaskEvent) -> None:
        line = describe_event(event)
        if line:
            self._out.write(inert(line.rstrip("\n"), one_line=True) + "\n")
            self._out.flush()

    @contextmanager
    def paused(self) -> Generator[None]:
        yield  # a line per event: nothing is redrawn over a question


class TerminalQuestions:
    """Asks the person at the terminal each permission question of a task's tree, one at a time: the question
    (what it asks first, then the details), then allow, always or deny read from the terminal (`fd`, in its line
    mode). A question answered elsewhere meanwhile (`tasks answer`, the dashboard) or left unanswered until
    --ask-timeout withdraws the prompt with a line that says so. End of input (Ctrl-D) leaves the question open for
    those other places; Ctrl-C stops the task, as it does at any time."""

    def __init__(
        self, app: Subagents, record: TaskRecord, out: TextIO, *, fd: int, by: str, status: StatusLine | PlainProgress
    ) -> None:
        self._app = app
        self._record = record
        self._out = out
        self._fd = fd
        self._by = by
        self._status = status
        self._asking: tuple[OpenQuestion, anyio.CancelScope] | None = None
        self._closed_with: Answer | None = None

    async def keep_asking(self) -> None:
        board = self._app.tasks.root(self._record).resources.questions
        seen: set[str] = set()
        while True:
            entry = await board.wait_for_new(seen)
            seen.add(entry.id)
            if board.get(entry.id) is entry:  # still open: not answered elsewhere before its turn came
                await self._ask(entry)

    async def on_event(self, event: TaskEvent) -> None:
        """A listener of the task: the question being asked here was answered elsewhere, or timed out."""
        if isinstance(event, QuestionAnswered) and self._asking is not None and self._asking[0] is event.entry:
            self._closed_with = event.answer
            self._asking[1].cancel()

    async def _ask(self, entry: OpenQuestion) -> None:
        with self._status.paused():
            self._write(_question_text(entry))
            choice: Choice | None = None
            with anyio.CancelScope() as withdrawn:
                self._asking, self._closed_with = (entry, withdrawn), None
                try:
                    choice = await self._read_choice(entry)
                except anyio.get_cancelled_exc_class():
                    self._write("\n")  # what follows (the closing line, or how Ctrl-C stopped the task) starts a line
                    raise
                finally:
                    self._asking = None
            if withdrawn.cancelled_caught and self._closed_with is not None:
                self._write(_closed_text(self._closed_with) + "\n")
            elif choice is None:
                self._write(
                    f"\nNo answer from this terminal: the question stays open for "
                    f"`mcp-subagents tasks answer {entry.task_id}` or the dashboard, until --ask-timeout.\n"
                )
            else:
                await self._give(entry, choice)

    async def _read_choice(self, entry: OpenQuestion) -> Choice | None:
        """The person's choice; None at the end of input."""
        always = always_text(entry.question) is not None
        prompt = "Allow it? [a]llow once, " + ("[A]lways allow, " if always else "") + "[d]eny: "
        while True:
            self._write(prompt)
            line = await self._read_line()
            if line is None:
                return None
            choice = choice_of(line)
            if choice is not None:
                return choice
            self._write("Type a to allow once, A to always allow or d to deny (or the whole word).\n")

    async def _read_line(self) -> str | None:
        await anyio.wait_readable(self._fd)  # a whole line, in the terminal's line mode; cancelled when withdrawn
        try:
            data = os.read(self._fd, 4096)
        except OSError:  # the terminal went away
            return None
        return data.decode("utf-8", errors="replace") if data else None

    async def _give(self, entry: OpenQuestion, choice: Choice) -> None:
        try:
            receipt = await self._app.answers.answer(self._record, entry.id, choice, by=self._by, via=VIA_TERMINAL)
        except QuestionClosedError as exc:
            self._write(f"{exc.message}\n")
            return
        note = f" {receipt.note}" if receipt.note else ""
        self._write(f"{ANSWERED[choice]}{note}\n")

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


def choice_of(typed: str) -> Choice | None:
    """What a line typed at the prompt chooses: a, A or d, or allow, always or deny in any case; None otherwise."""
    word = typed.strip()
    if word in KEYS:
        return KEYS[word]
    return next((choice for choice in CHOICES if choice == word.lower()), None)


def _question_text(entry: OpenQuestion) -> str:
    headline, *details = permission_message(entry.question, task_id=entry.task_id).splitlines()
    body = "\n".join(f"  {line}" if line else "" for line in details[1:])
    return f"\n{headline}\n{body}\n"


def _closed_text(answer: Answer) -> str:
    """Why the prompt went away: the answer someone gave elsewhere, or the wait that ran out."""
    return answer.why_not() if answer.kind == "unanswered" else f"Answered elsewhere: {answer_line(answer)}."


def summary_line(record: TaskRecord, outcome: TaskOutcome) -> str:
    """How the task ended in one line: state, turns, tool uses, tokens, cost, time and the task id."""
    counts = outcome.counts
    parts = [f"{record.agent} {outcome.state}"]
    if counts is not None:
        parts += [f"{counts.turns} turn(s)", f"{counts.tool_uses} tool use(s)", f"{counts.usage.total_tokens:,} tokens"]
        if counts.cost_usd is not None:
            parts.append(format_usd(counts.cost_usd))
        parts.append(f"{counts.duration_s:.1f} s")
    parts.append(f"task {record.id}")
    return " · ".join(parts)


def person_report(record: TaskRecord, outcome: TaskOutcome) -> tuple[str, str]:
    """(stdout, stderr) for a person: the agent's answer on stdout, how it went on stderr; both inert."""
    notes = [summary_line(record, outcome)]
    if outcome.state == "completed":
        if outcome.stop == "max_turns":
            notes.append(f"Stopped at the turn limit before the agent finished; continue with --resume {record.id}.")
        elif outcome.stop == "max_tokens":
            notes.append("The answer was cut off at the model's output token limit.")
        answer = outcome.text
    else:
        answer = ""
        if outcome.state == "failed":
            notes.append(f"Failed: {failure_message(outcome)}")
        elif outcome.state == "stopped":
            notes.append(f"Stopped. Its output so far is in {record.output_path}.")
    notes += denial_notes(outcome.denials)
    return inert(answer), inert("\n".join(notes))


def resume_hint(record: TaskRecord) -> str:
    return (
        f"Stopped task {record.id} after {record.progress.turn} turn(s). Continue it with:\n"
        f'  mcp-subagents run --resume {record.id} "PROMPT"'
    )


def _columns(out: TextIO) -> int:
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100
