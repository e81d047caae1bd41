"""Finished tasks as their transcripts tell them: this process keeps no finished task in memory, and a restarted one
finds those an earlier process left running and marks them interrupted."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.processes import process_alive
from ..core.redaction import Redactor
from ..core.state import TASK_ID
from .files import read_task
from .outcome import TaskOutcome
from .record import TaskRecord, TaskState
from .transcripts import TranscriptHeader, TranscriptWriter, read_summary


def load_finished(task_id: str, output_dir: Path, redact: Redactor) -> TaskRecord | None:
    """The finished task `task_id` from its transcript in `output_dir`; None when there is none (or not an id)."""
    path = output_dir / f"{task_id}.jsonl"
    if not TASK_ID.match(task_id) or not path.is_file():
        return None
    summary = read_summary(path)
    if summary is None:
        return None
    outcome = summary.outcome or interrupted_outcome(path)
    record = record_of(task_id, summary.header, path, redact, state=outcome.state)
    record.outcome, record.children = outcome, list(summary.children)
    record.done.set()
    return record


def record_of(task_id: str, header: TranscriptHeader, path: Path, redact: Redactor, *, state: TaskState) -> TaskRecord:
    """A record of task `task_id`, whose transcript (at `path`) has this header, as another process reads it."""
    return TaskRecord(
        id=task_id,
        agent=header.agent,
        description=header.description,
        output_path=path.with_suffix(".output"),
        transcript=TranscriptWriter(path, redact),
        created=header.created,
        resumed_from=header.resumed_from,
        owner=header.owner,
        state=state,
        parent=header.parent,
        model=header.model,
        effort=header.effort,
    )


def close_interrupted_transcripts(output_dir: Path, redact: Redactor, started: float) -> list[str]:
    """End the transcripts of tasks an earlier process left running (created before `started`, by a process that
    no longer runs) as interrupted; their ids. Blocking: for a worker thread."""
    closed: list[str] = []
    for path in sorted(output_dir.glob("*.jsonl")):
        summary = read_summary(path)
        if summary is None or summary.header.created >= started:  # this process's own tasks
            continue
        if _runs_elsewhere(summary.header.pid):  # another live server on this state directory runs it
            continue
        if summary.outcome is None:
            TranscriptWriter(path, redact).finished(interrupted_outcome(path))
            closed.append(summary.header.task_id)
    return closed


def interrupted_outcome(path: Path) -> TaskOutcome:
    """How a task that never wrote its end line ended: interrupted, with the question it waited on, if any."""
    snapshot = read_task(path)
    waited = snapshot.waiting if snapshot is not None else None
    return TaskOutcome(state="interrupted", waited_for=waited.question if waited is not None else None)


def _runs_elsewhere(pid: int | None) -> bool:
    return pid is not None and pid != os.getpid() and process_alive(pid)
