"""Tasks as another process sees them: read from the state directory's transcripts, for `mcp-subagents tasks` and
the dashboard. Every server process on the directory writes there, so this is every task, of every principal.

A task whose transcript has no end line is running (or queued) while the process named in its header lives, and
was interrupted once that process is gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..core.json_values import json_int, json_object, json_objects
from ..core.messages import Usage
from ..core.processes import process_alive
from ..core.state import TASK_ID
from ..models.pricing import PriceTable
from ..permissions.asking import PermissionQuestion
from .outcome import Stall, TaskOutcome
from .record import REPEATED_CALLS, CallRepeats
from .stalls import count_call, waits_for_nested
from .transcripts import TranscriptHeader, TranscriptWriter, entries, read_summary

MIN_PREFIX = 6
PROMPT_LINE_CHARS = 120
"""How much of a prompt's first line a task's row carries (the dashboard cuts it shorter to fit its column)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsagePoint:
    """The task's totals after one model response: what the dashboard draws over time."""

    at: float
    turn: int
    tokens: int
    cost_usd: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingQuestion:
    """A permission question the transcript holds no answer for."""

    id: str
    task_id: str
    asked_at: float
    question: PermissionQuestion


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSnapshot:
    path: Path
    """The transcript; the output file is beside it (`output_path`)."""
    header: TranscriptHeader
    state: str
    """queued, running, waiting (for the person's answer), completed, failed, stopped or interrupted."""
    turns: int = 0
    tool_uses: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    started_at: float | None = None
    updated_at: float = 0.0
    current_tools: tuple[str, ...] = ()
    """Tools called in the latest turn whose results have not come yet."""
    last_text: str = ""
    denials: int = 0
    outcome: TaskOutcome | None = None
    points: tuple[UsagePoint, ...] = ()
    waiting: WaitingQuestion | None = None
    """The question the task waits on (or waited on when it was interrupted); None when there is none."""
    questions: tuple[WaitingQuestion, ...] = ()
    """Every question it waits on, oldest first (`waiting` is the first)."""
    prompt_line: str = ""
    """The first line of the prompt the task was given (for a resumed task, its new one); empty until it starts."""
    active_at: float = 0.0
    """When the task last wrote to its transcript or its output file (a model reply, a tool call or result)."""
    repeats: CallRepeats = field(default_factory=CallRepeats)
    """The run of identical tool calls its latest call belongs to (`since`: wall-clock time, roughly)."""

    def stall(self, after: float, now: float | None = None) -> Stall | None:
        """As `stalls.stall_of` tells it of a live task, from the files: repeating itself, or silent for `after`
        seconds (0: never); None unless it is running (a task waiting for its person is not stalled, nor one whose
        nested task runs: the files of the nested task show its own stall)."""
        if self.state != "running":
            return None
        now = time.time() if now is None else now
        if self.repeats.count >= REPEATED_CALLS:
            repeats = self.repeats
            return Stall(kind="repeating", seconds=now - repeats.since, tool=repeats.tool, repeats=repeats.count)
        silent = max(0.0, now - self.active_at)
        if after > 0 and silent >= after and not waits_for_nested(self.current_tools):
            return Stall(kind="silent", seconds=silent, tool=", ".join(self.current_tools))
        return None

    @property
    def task_id(self) -> str:
        return self.header.task_id

    @property
    def finished(self) -> bool:
        return self.outcome is not None or self.state == "interrupted"

    @property
    def tokens(self) -> int:
        return self.usage.total_tokens

    @property
    def elapsed_s(self) -> float:
        if self.outcome is not None and self.outcome.counts is not None:
            return self.outcome.counts.duration_s
        if self.started_at is None:
            return 0.0
        end = (
            time.time() if self.state in ("running", "waiting") else self.updated_at
        )  # a running task's clock keeps going
        return max(0.0, end - self.started_at)


def transcripts_dir(state_dir: Path) -> Path:
    return state_dir / "tasks"


def read_task(path: Path, prices: PriceTable | None = None) -> TaskSnapshot | None:
    """The task of one transcript; None when the file has no header."""
    summary = read_summary(path)
    if summary is None:
        return None
    header, outcome = summary.header, summary.outcome
    seen = _Lines()
    for entry in _entries_or_none(path):
        seen.read(entry)
    usage, turns, tool_uses, cost = seen.usage, seen.turns, seen.tool_uses, seen.cost
    state = outcome.state if outcome is not None else ("running" if seen.started is not None else "queued")
    shows_question = outcome is None or outcome.state == "interrupted"  # an interrupted task keeps it in view
    questions = tuple(seen.questions.values()) if shows_question else ()
    waiting = questions[0] if questions else None
    if waiting is not None and outcome is None:
        state = "waiting"
    if outcome is None and not _alive(header.pid):
        state = "interrupted"
    if outcome is not None and outcome.counts is not None:
        usage, turns, tool_uses = outcome.counts.usage, outcome.counts.turns, outcome.counts.tool_uses
        cost = outcome.counts.cost_usd
    if cost is None and prices is not None and header.model:
        cost = prices.cost(header.model, usage)
    return TaskSnapshot(
        path=path,
        header=header,
        state=state,
        turns=turns,
        tool_uses=tool_uses,
        usage=usage,
        cost_usd=cost,
        started_at=seen.started,
        updated_at=_mtime(path),
        current_tools=tuple(seen.pending.values()) if outcome is None else (),
        last_text=seen.last_text,
        denials=seen.denials,
        outcome=outcome,
        points=tuple(seen.points),
        waiting=waiting,
        questions=questions,
        prompt_line=seen.prompt_line,
        active_at=max(_mtime(path), _mtime(output_path(path))),
        repeats=seen.repeats,
    )


@dataclass(slots=True)
class _Lines:
    """What the lines of a transcript add up to, read one by one."""

    turns: int = 0
    tool_uses: int = 0
    denials: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    started: float | None = None
    pending: dict[str, str] = field(default_factory=lambda: {})
    """Tool calls of the latest turn without a result yet: call id -> tool name."""
    questions: dict[str, WaitingQuestion] = field(default_factory=lambda: {})
    """Questions without an answer line."""
    last_text: str = ""
    points: list[UsagePoint] = field(default_factory=lambda: [])
    prompt_line: str = ""
    repeats: CallRepeats = field(default_factory=CallRepeats)
    last_at: float = 0.0
    """The time of the latest usage line: about when the model's latest reply came."""

    def read(self, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind == "state" and entry.get("state") == "running":
            self.started = _float(entry.get("at"))
        elif kind == "usage":
            self.turns = max(self.turns, json_int(entry.get("turn")))
            self.usage = _usage(entry.get("usage"))
            self.cost = _float(entry.get("cost_usd"))
            at = self.last_at = _float(entry.get("at")) or 0.0
            self.points.append(UsagePoint(at=at, turn=self.turns, tokens=self.usage.total_tokens, cost_usd=self.cost))
        elif kind == "denial":
            self.denials += 1
        elif kind == "question":
            asked = _waiting_question(entry)
            if asked is not None:
                self.questions[asked.id] = asked
        elif kind == "answer":
            self.questions.pop(str(entry.get("id")), None)
        elif kind == "message":
            message = entry.get("message")
            if isinstance(message, dict):
                typed = cast("dict[str, Any]", message)
                self.last_text = _follow_message(typed, self.pending) or self.last_text
                self.tool_uses += _calls(typed)
                # A resumed task's transcript repeats the conversation it continues before it starts: its own
                # prompt is the first one after the start.
                if typed.get("role") == "user" and self.started is not None and not self.prompt_line:
                    self.prompt_line = first_line(str(typed.get("content", "")))
                _count_repeats(typed, self.repeats, self.last_at)


def list_tasks(state_dir: Path, prices: PriceTable | None = None) -> list[TaskSnapshot]:
    """Every task of the state directory, newest first."""
    folder = transcripts_dir(state_dir)
    snapshots = [read_task(path, prices) for path in folder.glob("*.jsonl")] if folder.is_dir() else []
    found = [snapshot for snapshot in snapshots if snapshot is not None]
    return sorted(found, key=lambda snapshot: snapshot.header.created, reverse=True)


class TaskLookupError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def find_task(state_dir: Path, task_id: str) -> Path:
    """The transcript of `task_id`, or of the one task whose id starts with it (at least MIN_PREFIX characters).

    Raises:
        TaskLookupError: no such task, or the prefix fits several.
    """
    task_id = task_id.strip()
    if not TASK_ID.match(task_id):
        raise TaskLookupError(f"{task_id!r} is not a task id")
    folder = transcripts_dir(state_dir)
    exact = folder / f"{task_id}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(folder.glob(f"{task_id}*.jsonl")) if len(task_id) >= MIN_PREFIX and folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise TaskLookupError(f"{len(matches)} tasks start with {task_id}; give more of the id")
    raise TaskLookupError(f"No task {task_id} in {folder}")


def output_path(transcript: Path) -> Path:
    return transcript.with_suffix(".output")


def first_line(text: str, limit: int = PROMPT_LINE_CHARS) -> str:
    """The first line of `text` that has anything on it, its spaces collapsed, cut to `limit` characters with `…`."""
    line = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def mark_interrupted(path: Path) -> None:
    """Write the end line of a task whose process died, as a restarted server would."""
    TranscriptWriter(path).finished(TaskOutcome(state="interrupted"))


def _follow_message(message: dict[str, Any], pending: dict[str, str]) -> str | None:
    role = message.get("role")
    if role == "assistant":
        pending.clear()
        texts: list[str] = []
        for part in json_objects(message.get("parts")):
            if part.get("kind") == "tool_call":
                pending[str(part.get("id"))] = str(part.get("name"))
            elif part.get("kind") == "text":
                texts.append(str(part.get("text", "")))
        return "".join(texts).strip() or None
    if role == "tool_results":
        for result in json_objects(message.get("results")):
            pending.pop(str(result.get("call_id")), None)
    return None


def _calls(message: dict[str, Any]) -> int:
    if message.get("role") != "assistant":
        return 0
    return sum(1 for part in json_objects(message.get("parts")) if part.get("kind") == "tool_call")


def _count_repeats(message: dict[str, Any], repeats: CallRepeats, at: float) -> None:
    if message.get("role") != "assistant":
        return
    for part in json_objects(message.get("parts")):
        if part.get("kind") == "tool_call":
            count_call(repeats, str(part.get("name")), part.get("arguments"), at)


def _waiting_question(entry: dict[str, Any]) -> WaitingQuestion | None:
    question_id, arguments = entry.get("id"), entry.get("arguments")
    if not isinstance(question_id, str) or not isinstance(arguments, dict):
        return None
    suggestion, project = entry.get("suggestion"), entry.get("project")
    return WaitingQuestion(
        id=question_id,
        task_id=str(entry.get("task_id") or ""),
        asked_at=_float(entry.get("at")) or 0.0,
        question=PermissionQuestion(
            agent=str(entry.get("agent") or ""),
            tool=str(entry.get("tool") or ""),
            arguments=cast("dict[str, Any]", arguments),
            reason=str(entry.get("reason") or ""),
            suggestion=suggestion if isinstance(suggestion, str) else None,
            project=project if isinstance(project, str) else None,
            call_id=str(entry.get("call_id") or ""),
            kind="trust" if entry.get("kind") == "trust" else "call",
        ),
    )


def _alive(pid: int | None) -> bool:
    # A header written before headers named their process has no pid: a restarted server closes those.
    return pid is None or process_alive(pid)


def _entries_or_none(path: Path) -> Iterator[dict[str, Any]]:
    """The transcript's entries; none when it cannot be read (removed while being listed)."""
    try:
        yield from entries(path)
    except OSError:
        return


def _usage(value: Any) -> Usage:
    data = json_object(value)
    return Usage(
        input_tokens=json_int(data.get("input_tokens")),
        output_tokens=json_int(data.get("output_tokens")),
        cache_creation_tokens=json_int(data.get("cache_creation_tokens")),
        cache_read_tokens=json_int(data.get("cache_read_tokens")),
    )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
