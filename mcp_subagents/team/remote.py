"""Tasks another replica runs or ran, as this replica sees them: their files written here from the database (so
everything that reads a task's files reads them as it reads its own), and a record whose `done` is set when the
task's end line arrives."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import cast

import anyio

from ..agent.loop import ToolStarted, TurnStarted
from ..core.messages import AssistantMessage
from ..core.redaction import Redactor
from ..core.state import FILE_MODE, TASK_ID
from ..permissions.asking import OpenQuestion
from ..tasks.files import read_task
from ..tasks.finished import load_finished, record_of
from ..tasks.record import TaskEvent, TaskRecord
from ..tasks.transcripts import decode_message, entries, read_summary
from .database import Database
from .journal import OUTPUT, TRANSCRIPT
from .schema import SCHEMA

FILES = {TRANSCRIPT: ".jsonl", OUTPUT: ".output"}


async def fetch_lines(database: Database, task_id: str) -> dict[str, list[str]]:
    """The task's files as the database holds them, by file; empty when it knows no such task."""
    rows = await database.fetch(
        f"SELECT file, line FROM {SCHEMA}.lines WHERE task_id = %s ORDER BY file, seq", (task_id,)
    )
    files: dict[str, list[str]] = {TRANSCRIPT: [], OUTPUT: []}
    for file, line in rows:
        files.setdefault(file, []).append(line)
    return files


def write_files(output_dir: Path, task_id: str, files: dict[str, list[str]]) -> None:
    """Replace the task's files in `output_dir` with `files` (each written whole, then renamed into place). The
    header's process id is left out: it names a process of another replica, maybe of another machine, whose state
    says nothing here (a task whose replica died is carried on, not over)."""
    transcript = files.get(TRANSCRIPT, [])
    if transcript:
        files = {**files, TRANSCRIPT: [_without_pid(transcript[0]), *transcript[1:]]}
    for file, suffix in FILES.items():
        target = output_dir / f"{task_id}{suffix}"
        handle, scratch = tempfile.mkstemp(dir=output_dir, prefix=f".{task_id}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as out:
                out.write("".join(files.get(file, [])))
            os.chmod(scratch, FILE_MODE)
            os.replace(scratch, target)
        except BaseException:
            Path(scratch).unlink(missing_ok=True)
            raise


def _without_pid(line: str) -> str:
    try:
        header = json.loads(line)
    except json.JSONDecodeError:
        return line
    if not isinstance(header, dict) or "pid" not in header:
        return line
    return json.dumps({**cast("dict[str, object]", header), "pid": None}, ensure_ascii=False) + "\n"


class RemoteTasks:
    """The records of tasks this replica reads from the database; one object per task, so waiters are woken."""

    def __init__(self, database: Database, output_dir: Path, redact: Redactor) -> None:
        self._database = database
        self._output_dir = output_dir
        self._redact = redact
        self._records: dict[str, TaskRecord] = {}
        self._told: dict[str, int] = {}
        """How many transcript entries of each task the waiters on it were told about."""

    def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    def followed(self, task_id: str) -> bool:
        """Whether someone here waits on the task and is shown its progress."""
        record = self._records.get(task_id)
        return record is not None and bool(record.resources.listeners)

    async def refresh(self, task_id: str) -> TaskRecord | None:
        """Write the task's files here from the database and read it; None when the database has no such task."""
        if not TASK_ID.match(task_id):
            return None
        files = await fetch_lines(self._database, task_id)
        if not files[TRANSCRIPT]:
            return None
        await anyio.to_thread.run_sync(write_files, self._output_dir, task_id, files)
        record = self._read(task_id)
        if record is not None and not record.finished:
            await self._tell(record)
        return record

    async def _tell(self, record: TaskRecord) -> None:
        """Give the task's listeners (a host waiting on it here) the turns and tool calls it made since they were
        last told, as the replica that runs it saw them."""
        path = self._output_dir / f"{record.id}.jsonl"
        told = self._told.get(record.id)
        events, seen = progress_events(path, record, since=told or 0)
        self._told[record.id] = seen
        if told is None:  # the first look: what came before is history, not progress
            return
        for event in events:
            for listener in list(record.resources.listeners):
                await listener(event)

    def _read(self, task_id: str) -> TaskRecord | None:
        finished = load_finished(task_id, self._output_dir, self._redact)
        held = self._records.get(task_id)
        if finished is not None and finished.outcome is not None and _ended(self._output_dir, task_id):
            if held is None:
                return finished
            held.outcome, held.state, held.children = finished.outcome, finished.state, finished.children
            held.done.set()
            del self._records[task_id]
            self._told.pop(task_id, None)
            return held
        record = held or _running_record(self._output_dir, task_id, self._redact)
        if record is not None:
            self._records[task_id] = record
            record.resources.questions.mirror(open_questions(self._output_dir / f"{task_id}.jsonl"))
        return record


def open_questions(path: Path) -> list[OpenQuestion]:
    """The questions the task's transcript shows asked and not answered, oldest first."""
    snapshot = read_task(path)
    if snapshot is None:
        return []
    return [
        OpenQuestion(id=waiting.id, task_id=waiting.task_id, question=waiting.question, asked_at=waiting.asked_at)
        for waiting in snapshot.questions
    ]


def progress_events(path: Path, record: TaskRecord, *, since: int) -> tuple[list[TaskEvent], int]:
    """The turns and tool calls of the transcript's entries after the first `since`, as run events (counted on
    `record`'s progress); and how many entries there are."""
    events: list[TaskEvent] = []
    progress, count = record.progress, 0
    for count, entry in enumerate(entries(path), start=1):
        if count <= since:
            continue
        if entry.get("type") == "usage" and isinstance(turn := entry.get("turn"), int) and turn > progress.turn:
            progress.turn = turn
            events.append(TurnStarted(turn=turn, max_turns=0))
        elif entry.get("type") == "message":
            with contextlib.suppress(KeyError, ValueError):
                message = decode_message(entry["message"])
                if isinstance(message, AssistantMessage):
                    progress.tool_uses += len(message.tool_calls)
                    events += [ToolStarted(turn=progress.turn, call=call) for call in message.tool_calls]
    return events, count


def _ended(output_dir: Path, task_id: str) -> bool:
    summary = read_summary(output_dir / f"{task_id}.jsonl")
    return summary is not None and summary.outcome is not None


def _running_record(output_dir: Path, task_id: str, redact: Redactor) -> TaskRecord | None:
    path = output_dir / f"{task_id}.jsonl"
    summary = read_summary(path)
    return record_of(task_id, summary.header, path, redact, state="running") if summary is not None else None
