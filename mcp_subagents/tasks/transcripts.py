"""One JSONL file per task: a header, every conversation message as it happens, and how the task ended.

The file is the durable record of a task: a restarted server reads it to report the task's outcome
(a task without an end line was interrupted) and to resume its conversation. A `compaction` line marks where the
conversation was replaced by a summary: resuming starts from the messages after it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter

from ..core.messages import AssistantMessage, Message, ToolResult, ToolResultMessage, Usage
from ..core.principals import LOCAL_PRINCIPAL
from ..core.redaction import Redactor
from ..core.state import AppendFile
from ..permissions.asking import Answer, Denial, OpenQuestion
from .outcome import FINISHED_STATES, TaskOutcome, decode_outcome, encode_outcome

INTERRUPTED_TOOL_RESULT = "The task was interrupted before this tool call finished; its result is unknown."
INTERRUPTED_WHILE_ASKING = (
    "The task was interrupted while this call waited for the person's permission, so it did not run. Make the call "
    "again to ask again."
)


@cache
def _message_adapter() -> TypeAdapter[Message]:
    return TypeAdapter(Message)


def encode_message(message: Message) -> dict[str, Any]:
    return _message_adapter().dump_python(message, mode="json")


def decode_message(data: Any) -> Message:
    return _message_adapter().validate_python(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptHeader:
    task_id: str
    agent: str
    description: str
    created: float
    resumed_from: str | None = None
    owner: str = LOCAL_PRINCIPAL
    """The principal the task belongs to; transcripts written before owners were recorded belong to the local user."""
    parent: str | None = None
    """The task whose agent launched this one (a nested subagent)."""
    model: str = ""
    effort: str | None = None
    model_note: str = ""
    """When the agent file's model was overridden: what ran instead, and by what."""
    budget_usd: float | None = None
    pid: int | None = None
    """The server process that runs the task."""
    control: str | None = None
    """The name of that process's control channel under the state directory (`tasks stop`, the dashboard)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptSummary:
    header: TranscriptHeader
    outcome: TaskOutcome | None
    """How the task ended; None when the file has no end line (the server died while the task ran)."""
    children: tuple[str, ...] = ()
    """The tasks its agent launched, in order, as the end line names them."""


class TranscriptWriter:
    """Appends lines to a task's transcript, flushing each one so a crash loses at most the line being written."""

    def __init__(self, path: Path, redact: Redactor | None = None, copy: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._redact = redact or Redactor()
        self._file = AppendFile(path, copy=copy)

    def open(self) -> None:
        """Create the file now (see `AppendFile.open`).

        Raises:
            OSError: it could not be created."""
        self._file.open()

    def _append(self, entry: dict[str, Any]) -> None:
        line = self._redact(json.dumps(entry, ensure_ascii=False))
        if not _encodable(line):  # a lone surrogate (from a file name or a model): keep it as a \u escape
            line = self._redact(json.dumps(entry))
        self._file.append(line + "\n")

    def header(self, header: TranscriptHeader) -> None:
        self._append(
            {
                "type": "header",
                "task_id": header.task_id,
                "agent": header.agent,
                "description": header.description,
                "created": header.created,
                "resumed_from": header.resumed_from,
                "owner": header.owner,
                **({"parent": header.parent} if header.parent else {}),
                "model": header.model,
                **({"effort": header.effort} if header.effort else {}),
                **({"model_note": header.model_note} if header.model_note else {}),
                "budget_usd": header.budget_usd,
                "pid": header.pid,
                "control": header.control,
            }
        )

    def running(self) -> None:
        """The task left the queue and started."""
        self._append({"type": "state", "state": "running", "at": time.time()})

    def usage(self, *, turn: int, usage: Usage, cost_usd: float | None) -> None:
        """The task's token counts and cost so far, after a model response."""
        counts = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_tokens": usage.cache_creation_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
        }
        self._append({"type": "usage", "turn": turn, "at": time.time(), "usage": counts, "cost_usd": cost_usd})

    def denial(self, denial: Denial) -> None:
        self._append({"type": "denial", "tool": denial.tool, "arguments": denial.arguments, "reason": denial.reason})

    def question(self, entry: OpenQuestion) -> None:
        """A call waits for the person's answer (another process shows the task as waiting until the answer line)."""
        question = entry.question
        self._append(
            {
                "type": "question",
                "id": entry.id,
                "task_id": entry.task_id,
                "at": entry.asked_at,
                "agent": question.agent,
                "tool": question.tool,
                "arguments": question.arguments,
                "reason": question.reason,
                "suggestion": question.suggestion,
                "project": question.project,
                "call_id": question.call_id,
                "kind": question.kind,
            }
        )

    def answer(self, entry: OpenQuestion, answer: Answer) -> None:
        self._append(
            {
                "type": "answer",
                "id": entry.id,
                "at": time.time(),
                "kind": answer.kind,
                "always": answer.always,
                "by": answer.by,
                "via": answer.via,
            }
        )

    def notice(self, kind: str, text: str) -> None:
        self._append({"type": "notice", "kind": kind, "text": text, "at": time.time()})

    def message(self, message: Message) -> None:
        self._append({"type": "message", "message": encode_message(message)})

    def compaction(self, summary: str, reason: str, replaced: int) -> None:
        self._append({"type": "compaction", "reason": reason, "replaced": replaced, "summary": summary})

    def finished(self, outcome: TaskOutcome, children: tuple[str, ...] = ()) -> None:
        """The end line, the transcript's last: the file is closed after it. `children`: the tasks its agent
        launched (the process keeps nothing of a finished task: its tree is read back from here)."""
        try:
            end: dict[str, Any] = {"type": "end", "state": outcome.state, "outcome": encode_outcome(outcome)}
            if children:
                end["children"] = list(children)
            self._append(end)
        finally:
            self._file.close()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """A transcript's parsed lines; a line cut short by a crash (or otherwise unreadable) is skipped."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield cast("dict[str, Any]", entry)


def read_summary(path: Path) -> TranscriptSummary | None:
    """The header and how the task ended. The header is the first line and the end line the last, so only those
    are read; a file that does not look like that (cut short by a crash) is read whole."""
    quick = _first_and_last_entries(path)
    if quick is not None and quick[0].get("type") == "header" and quick[1].get("type") == "end":
        return TranscriptSummary(header=_header(quick[0]), outcome=_end_outcome(quick[1]), children=_children(quick[1]))
    header: TranscriptHeader | None = None
    end: dict[str, Any] | None = None
    for entry in entries(path):
        if entry.get("type") == "header":
            header = _header(entry)
        elif entry.get("type") == "end":
            end = entry
    if header is None:
        return None
    if end is None:
        return TranscriptSummary(header=header, outcome=None)
    return TranscriptSummary(header=header, outcome=_end_outcome(end), children=_children(end))


def _children(end: dict[str, Any]) -> tuple[str, ...]:
    listed: object = end.get("children")
    if not isinstance(listed, list):
        return ()
    return tuple(child for child in cast("list[object]", listed) if isinstance(child, str))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _header(entry: dict[str, Any]) -> TranscriptHeader:
    return TranscriptHeader(
        task_id=str(entry["task_id"]),
        agent=str(entry["agent"]),
        description=str(entry.get("description", "")),
        created=float(entry.get("created", 0.0)),
        resumed_from=entry.get("resumed_from"),
        owner=str(entry.get("owner", LOCAL_PRINCIPAL)),
        parent=entry.get("parent") if isinstance(entry.get("parent"), str) else None,
        model=str(entry.get("model") or ""),
        effort=entry.get("effort") if isinstance(entry.get("effort"), str) else None,
        model_note=str(entry.get("model_note") or ""),
        budget_usd=_number(entry.get("budget_usd")),
        pid=entry.get("pid") if isinstance(entry.get("pid"), int) else None,
        control=entry.get("control") if isinstance(entry.get("control"), str) else None,
    )


_TAIL_BLOCK = 64 * 1024


def _first_and_last_entries(path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The first and the last line, parsed; None when either is not a JSON object."""
    with path.open("rb") as file:
        first = file.readline()
        position = file.seek(0, os.SEEK_END)
        tail = b""
        # Read backwards until the tail holds the whole last line: a line break before the file's final one.
        while position > 0 and b"\n" not in tail.rstrip(b"\n"):
            step = min(_TAIL_BLOCK, position)
            position -= step
            file.seek(position)
            tail = file.read(step) + tail
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        head: object = json.loads(first)
        end: object = json.loads(last)
    except ValueError:
        return None
    if not (isinstance(head, dict) and isinstance(end, dict)):
        return None
    return cast(dict[str, Any], head), cast(dict[str, Any], end)


def _end_outcome(entry: dict[str, Any]) -> TaskOutcome:
    """The end line's outcome; a line from before outcomes were data carries the rendered text under "result"."""
    if "outcome" in entry:
        try:
            return decode_outcome(entry["outcome"])
        except ValueError:
            pass
    state = entry.get("state")
    rendered = entry.get("result")
    return TaskOutcome(
        state=state if state in FINISHED_STATES else "interrupted",
        rendered=rendered if isinstance(rendered, str) else None,
    )


def read_history(path: Path) -> list[Message]:
    """The conversation so far, repaired so it can be sent to a model again."""
    messages: list[Message] = []
    asking: dict[str, str] = {}
    """Open questions: question id -> the call it is about."""
    for entry in entries(path):
        kind = entry.get("type")
        if kind == "compaction":
            messages.clear()  # the messages that follow it start the conversation anew
        elif kind == "question":
            asking[str(entry.get("id"))] = str(entry.get("call_id") or "")
        elif kind == "answer":
            asking.pop(str(entry.get("id")), None)
        elif kind == "message":
            try:
                messages.append(decode_message(entry["message"]))
            except (KeyError, ValueError):
                continue
    return _close_open_tool_calls(messages, set(asking.values()))


def _close_open_tool_calls(messages: list[Message], waiting_calls: set[str]) -> list[Message]:
    """A crash between a tool call and its result leaves calls no model would accept unanswered."""
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        results = tuple(
            ToolResult(
                call_id=call.id,
                content=INTERRUPTED_WHILE_ASKING if call.id in waiting_calls else INTERRUPTED_TOOL_RESULT,
                is_error=True,
            )
            for call in messages[-1].tool_calls
        )
        messages.append(ToolResultMessage(results=results))
    return messages
