"""What `run` and `serve` show a person at a terminal: a live status line, results written for reading, and a
server that says what it is waiting for and stops on Ctrl-C. What the model wrote (tool names, its answer, its
progress lines) reaches the terminal inert (`render.inert`)."""

from __future__ import annotations

import os
from typing import TextIO

import anyio

from ..agent.loop import ModelResponded, ToolFinished, ToolStarted, TurnStarted
from ..models.pricing import format_usd
from ..render import denial_notes, describe_event, failure_message
from ..render.inert import inert
from ..tasks.outcome import TaskOutcome
from ..tasks.record import TaskEvent, TaskRecord

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.25
"""Seconds between redraws of the status line (the elapsed time and the spinner move on their own)."""

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

    def __init__(self, record: TaskRecord, out: TextIO) -> None:
        self._record = record
        self._out = out
        self._tool = ""
        self._frame = 0
        self._shown = False

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
        parts.append(f"{progress.elapsed():.0f} s")
        return " · ".join(parts)

    def draw(self) -> None:
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


class PlainProgress:
    """For a log or a pipe: one line per turn and tool call, as in the task's output file."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def on_event(self, event: TaskEvent) -> None:
        line = describe_event(event)
        if line:
            self._out.write(inert(line.rstrip("\n"), one_line=True) + "\n")
            self._out.flush()


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
