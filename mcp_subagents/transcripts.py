"""One JSONL file per task: a header, every conversation message as it happens, and the final state.

The file is the durable record of a task: a restarted server reads it to report the task's state
(a task without a final line was interrupted) and to resume its conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from .messages import AssistantMessage, Message, ToolResult, ToolResultMessage
from .redaction import Redactor

INTERRUPTED_TOOL_RESULT = "The task was interrupted before this tool call finished; its result is unknown."


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


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptSummary:
    header: TranscriptHeader
    state: str
    """The final state, or "interrupted" when the file has none (the server died while the task ran)."""
    result_text: str | None


class TranscriptWriter:
    """Appends lines to a task's transcript, flushing each one so a crash loses at most the line being written."""

    def __init__(self, path: Path, redact: Redactor | None = None) -> None:
        self.path = path
        self._redact = redact or Redactor()

    def _append(self, entry: dict[str, Any]) -> None:
        line = self._redact(json.dumps(entry, ensure_ascii=False))
        if not _encodable(line):  # a lone surrogate (from a file name or a model): keep it as a \u escape
            line = self._redact(json.dumps(entry))
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()

    def header(self, header: TranscriptHeader) -> None:
        self._append(
            {
                "type": "header",
                "task_id": header.task_id,
                "agent": header.agent,
                "description": header.description,
                "created": header.created,
                "resumed_from": header.resumed_from,
            }
        )

    def message(self, message: Message) -> None:
        self._append({"type": "message", "message": encode_message(message)})

    def finished(self, state: str, result_text: str) -> None:
        self._append({"type": "end", "state": state, "result": result_text})


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _entries(path: Path) -> Iterator[dict[str, Any]]:
    """Parsed lines; a line cut short by a crash (or otherwise unreadable) is skipped."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield entry


def read_summary(path: Path) -> TranscriptSummary | None:
    header: TranscriptHeader | None = None
    state, result = "interrupted", None
    for entry in _entries(path):
        if entry.get("type") == "header":
            header = TranscriptHeader(
                task_id=str(entry["task_id"]),
                agent=str(entry["agent"]),
                description=str(entry.get("description", "")),
                created=float(entry.get("created", 0.0)),
                resumed_from=entry.get("resumed_from"),
            )
        elif entry.get("type") == "end":
            state, result = str(entry.get("state", "interrupted")), entry.get("result")
    return None if header is None else TranscriptSummary(header=header, state=state, result_text=result)


def read_history(path: Path) -> list[Message]:
    """The conversation so far, repaired so it can be sent to a model again."""
    messages: list[Message] = []
    for entry in _entries(path):
        if entry.get("type") != "message":
            continue
        try:
            messages.append(decode_message(entry["message"]))
        except (KeyError, ValueError):
            continue
    return _close_open_tool_calls(messages)


def _close_open_tool_calls(messages: list[Message]) -> list[Message]:
    """A crash between a tool call and its result leaves calls no model would accept unanswered."""
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        results = tuple(
            ToolResult(call_id=call.id, content=INTERRUPTED_TOOL_RESULT, is_error=True)
            for call in messages[-1].tool_calls
        )
        messages.append(ToolResultMessage(results=results))
    return messages
