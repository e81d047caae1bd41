"""What the dashboard shows, read from the state directory: the task list, and a task's transcript as display items
(messages, tool calls, results, denials, permission questions and their answers, compactions, notices, how it
ended), followed as the file grows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..core.json_values import json_object
from ..models.pricing import PriceTable
from ..permissions.asking import Answer, AnswerKind, PermissionQuestion
from ..render import outcome_text
from ..render.envelopes import recorded_task
from ..render.questions import question_headline
from ..render.rows import DEFAULT_STALL_AFTER, task_row
from ..render.status import answer_line
from ..render.tree import snapshot_entry, tree_rows
from ..tasks.files import TaskSnapshot, output_path, read_task, transcripts_dir
from ..tasks.outcome import decode_outcome
from ..tasks.tree import TreeReader

MAX_RESULT_CHARS = 20_000
"""A tool result longer than this is cut in the page (the transcript file keeps all of it)."""


class TaskRows:
    """The task list, re-reading only the transcripts that changed since the last look (a finished task's file no
    longer changes; an unfinished one is read again each time, since its process may have died)."""

    def __init__(self, state_dir: Path, prices: PriceTable, *, stall_after: float = DEFAULT_STALL_AFTER) -> None:
        self._state_dir = state_dir
        self._prices = prices
        self._stall_after = stall_after
        self._known: dict[Path, tuple[tuple[int, int], TaskSnapshot]] = {}

    def rows(self) -> list[dict[str, Any]]:
        folder = transcripts_dir(self._state_dir)
        snapshots: list[TaskSnapshot] = []
        seen: dict[Path, tuple[tuple[int, int], TaskSnapshot]] = {}
        for path in folder.glob("*.jsonl") if folder.is_dir() else ():
            try:
                stat = path.stat()
            except OSError:
                continue
            stamp = (stat.st_size, stat.st_mtime_ns)
            known = self._known.get(path)
            snapshot = known[1] if known is not None and known[0] == stamp and known[1].finished else None
            snapshot = snapshot or read_task(path, self._prices)
            if snapshot is not None:
                seen[path] = (stamp, snapshot)
                snapshots.append(snapshot)
        self._known = seen
        snapshots.sort(key=lambda snapshot: snapshot.header.created, reverse=True)
        return [task_row(snapshot, stall_after=self._stall_after) for snapshot in snapshots]


def task_page_row(snapshot: TaskSnapshot, tree: TreeReader, *, stall_after: float) -> dict[str, Any]:
    """A task as its page shows it: its row, with the nested tasks below it (each with its subtree's figures).
    Reads their transcripts: for a worker thread."""
    row = task_row(snapshot, stall_after=stall_after)
    row["tree"] = tree_rows([snapshot_entry(level, child) for level, child in tree.subtasks(snapshot.task_id)])
    return row


def state_signature(state_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """Changes whenever a task file is added or grows: the dashboard sends a new list only then."""
    folder = transcripts_dir(state_dir)
    if not folder.is_dir():
        return ()
    stamps: list[tuple[str, int, int]] = []
    for path in folder.glob("*.jsonl"):
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((path.name, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(stamps))


@dataclass(slots=True)
class TranscriptFollower:
    """Reads a transcript from where it left off; a line still being written waits for its newline."""

    path: Path
    offset: int = 0

    def new_items(self, snapshot: TaskSnapshot | None = None) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as transcript:
                transcript.seek(self.offset)
                data = transcript.read()
        except OSError:
            return []
        complete = data.rfind(b"\n") + 1
        self.offset += complete
        items: list[dict[str, Any]] = []
        for line in data[:complete].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                items.extend(display_items(cast("dict[str, Any]", entry), snapshot))
        return items


def display_items(entry: dict[str, Any], snapshot: TaskSnapshot | None = None) -> Iterator[dict[str, Any]]:
    """One transcript line as what the page draws; lines the page has no use for give nothing."""
    kind = entry.get("type")
    if kind == "state":
        yield {"kind": "started", "at": entry.get("at")}
    elif kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            yield from _message_items(cast("dict[str, Any]", message))
    elif kind == "compaction":
        yield {
            "kind": "compaction",
            "reason": entry.get("reason"),
            "replaced": entry.get("replaced"),
            "summary": str(entry.get("summary", "")),
        }
    elif kind == "denial":
        yield {
            "kind": "denial",
            "tool": entry.get("tool"),
            "arguments": entry.get("arguments"),
            "reason": entry.get("reason"),
        }
    elif kind == "notice":
        yield {"kind": "notice", "text": str(entry.get("text", "")), "at": entry.get("at")}
    elif kind in ("question", "answer"):
        yield _question_item(entry)
    elif kind == "usage":
        usage = json_object(entry.get("usage"))
        tokens = sum(value for value in usage.values() if isinstance(value, int))
        yield {
            "kind": "usage",
            "turn": entry.get("turn"),
            "at": entry.get("at"),
            "tokens": tokens,
            "cost_usd": entry.get("cost_usd"),
        }
    elif kind == "end":
        yield {"kind": "end", "state": entry.get("state"), "text": _end_text(entry, snapshot)}


def _message_items(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    role = message.get("role")
    if role == "user":
        yield {
            "kind": "user",
            "text": str(message.get("content", "")),
            "context_blocks": len(_list(message.get("context"))),
        }
    elif role == "assistant":
        parts = [json_object(part) for part in _list(message.get("parts"))]
        text = "".join(str(p.get("text", "")) for p in parts if p.get("kind") == "text").strip()
        calls = [
            {"id": str(p.get("id")), "name": str(p.get("name")), "arguments": p.get("arguments")}
            for p in parts
            if p.get("kind") == "tool_call"
        ]
        yield {
            "kind": "assistant",
            "text": text,
            "thinking": any(p.get("kind") == "thinking" for p in parts),
            "tool_calls": calls,
        }
    elif role == "tool_results":
        for result in (json_object(item) for item in _list(message.get("results"))):
            content = str(result.get("content", ""))
            cut = len(content) > MAX_RESULT_CHARS
            yield {
                "kind": "result",
                "call_id": str(result.get("call_id")),
                "content": content[:MAX_RESULT_CHARS] + ("\n…" if cut else ""),
                "is_error": bool(result.get("is_error")),
            }


def _question_item(entry: dict[str, Any]) -> dict[str, Any]:
    """A question asked of the person (its headline), or what became of it (who answered, where)."""
    if entry.get("type") == "question":
        question = PermissionQuestion(
            agent=str(entry.get("agent", "")),
            tool=str(entry.get("tool", "")),
            arguments=json_object(entry.get("arguments")),
            reason="",
        )
        return {"kind": "question", "at": entry.get("at"), "text": question_headline(question)}
    kind = entry.get("kind")
    if kind not in ("allowed", "declined"):  # a question is only ever left unanswered by its wait running out
        text = "Nobody answered within --ask-timeout: the call was denied."
        return {"kind": "answer", "at": entry.get("at"), "answer": "unanswered", "text": text}
    answer = Answer(
        kind=cast("AnswerKind", kind),
        always=entry.get("always") is True,
        by=_text_or_none(entry.get("by")),
        via=_text_or_none(entry.get("via")),
    )
    return {"kind": "answer", "at": entry.get("at"), "answer": answer.kind, "text": answer_line(answer)}


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def _end_text(entry: dict[str, Any], snapshot: TaskSnapshot | None) -> str:
    if snapshot is None or "outcome" not in entry:
        return str(entry.get("result", entry.get("state", "")))
    try:
        outcome = decode_outcome(entry["outcome"])
    except ValueError:
        return str(entry.get("state", ""))
    header = snapshot.header
    return outcome_text(
        recorded_task(header, output_path(snapshot.path)),
        outcome,
        max_chars=None,
    )
