"""TaskManager: task ids, the concurrency queue, watchdogs, stop, output files, and recovery after a restart."""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from .errors import RunError, SubagentsError, TaskNotFoundError
from .loop import MessageAppended, ModelResponded, RunEvent, RunResult, ToolStarted, TurnStarted
from .messages import Message
from .redaction import Redactor
from .render import task_error
from .state import private_file
from .task_record import (
    FINISHED_STATES,
    Job,
    TaskLimits,
    TaskRecord,
    TaskState,
    completed_text,
    describe_event,
    failure_text,
    interrupted_message,
    stopped_message,
)
from .transcripts import TranscriptHeader, TranscriptWriter, read_summary

logger = logging.getLogger(__name__)

TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class TaskManager:
    """Owns every task of this server process. Enter `running()` once; it holds the task group."""

    def __init__(self, *, state_dir: Path, limits: TaskLimits, secrets: Iterable[str] = ()) -> None:
        self.limits = limits
        self.output_dir = state_dir / "tasks"
        self._redact = Redactor(secrets)
        self._records: dict[str, TaskRecord] = {}
        self._queue: list[str] = []
        self._limiter = anyio.CapacityLimiter(limits.max_concurrent)
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[TaskManager]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._close_interrupted_transcripts, time.time())
            try:
                yield self
            finally:
                self._group = None
                for record in self._records.values():
                    if not record.finished:
                        self._cancel(record, "interrupted")
                    record.processes.kill_all()  # background processes must not outlive the server
                group.cancel_scope.cancel()

    def new_id(self) -> str:
        while (task_id := secrets.token_hex(4)) in self._records:
            pass
        return task_id

    def get(self, task_id: str) -> TaskRecord:
        """A task of this process, or one an earlier server process ran on the same state directory."""
        task_id = task_id.strip()
        record = self._records.get(task_id) or self._load_finished(task_id)
        if record is None:
            raise TaskNotFoundError(task_id)
        return record

    def transcript_path(self, task_id: str) -> Path:
        return self.output_dir / f"{task_id}.jsonl"

    def _load_finished(self, task_id: str) -> TaskRecord | None:
        path = self.transcript_path(task_id)
        if not TASK_ID_PATTERN.match(task_id) or not path.is_file():
            return None
        summary = read_summary(path)
        if summary is None:
            return None
        header = summary.header
        record = TaskRecord(
            id=task_id,
            agent=header.agent,
            description=header.description,
            output_path=self.output_dir / f"{task_id}.output",
            transcript=TranscriptWriter(path, self._redact),
            created=header.created,
            resumed_from=header.resumed_from,
        )
        record.state = summary.state if summary.state in FINISHED_STATES else "interrupted"
        record.result_text = summary.result_text or task_error(header.agent, interrupted_message(task_id))
        record.done.set()
        self._records[task_id] = record
        return record

    async def _close_interrupted_transcripts(self, started: float) -> None:
        """Mark tasks an earlier process left running as interrupted, so they report so and can be resumed."""

        def scan() -> list[str]:
            closed: list[str] = []
            for path in sorted(self.output_dir.glob("*.jsonl")):
                summary = read_summary(path)
                if summary is None or summary.header.created >= started:  # this process's own tasks
                    continue
                if summary.state == "interrupted" and summary.result_text is None:
                    message = interrupted_message(summary.header.task_id)
                    TranscriptWriter(path, self._redact).finished(
                        "interrupted", task_error(summary.header.agent, message)
                    )
                    closed.append(summary.header.task_id)
            return closed

        closed = await anyio.to_thread.run_sync(scan)
        if closed:
            logger.warning(
                "%d task(s) were interrupted when the previous server stopped; resume them with Task resume: %s",
                len(closed),
                ", ".join(closed),
            )

    def queue_position(self, record: TaskRecord) -> int | None:
        return self._queue.index(record.id) + 1 if record.id in self._queue else None

    @property
    def queue_length(self) -> int:
        return len(self._queue)

    def start(
        self,
        *,
        agent: str,
        description: str,
        job: Job,
        background: bool = False,
        resumed_from: str | None = None,
        history: Sequence[Message] = (),
    ) -> TaskRecord:
        if self._group is None:
            raise SubagentsError("The task manager is not running")
        task_id = self.new_id()
        record = TaskRecord(
            id=task_id,
            agent=agent,
            description=description,
            background=background,
            output_path=self.output_dir / f"{task_id}.output",
            transcript=TranscriptWriter(self.transcript_path(task_id), self._redact),
            resumed_from=resumed_from,
        )
        record.scope = anyio.CancelScope()
        for path in (record.output_path, record.transcript.path):
            private_file(path)
        header = TranscriptHeader(
            task_id=task_id, agent=agent, description=description, created=record.created, resumed_from=resumed_from
        )
        record.transcript.header(header)
        for message in history:
            record.transcript.message(message)
        resumed = f" (resuming task {resumed_from})" if resumed_from else ""
        record.output_path.write_text(f"[task {task_id}] {agent}: {description}{resumed}\n", encoding="utf-8")
        self._records[task_id] = record
        self._queue.append(task_id)
        self._group.start_soon(self._execute, record, job, name=f"task {task_id}")
        return record

    async def stop(self, task_id: str, *, grace: float = 5.0) -> TaskRecord:
        """Cancel a queued or running task and wait until it has cleaned up (its processes are gone)."""
        record = self.request_stop(task_id)
        await self.wait(record, grace)
        return record

    def request_stop(self, task_id: str) -> TaskRecord:
        """Ask a task to stop without waiting (used when the host cancels a foreground call)."""
        record = self.get(task_id)
        if not record.finished:
            self._cancel(record, "stopped")
        return record

    def _cancel(self, record: TaskRecord, why: str) -> None:
        record.stop_requested = why
        if record.scope is not None:
            record.scope.cancel()

    async def wait(self, record: TaskRecord, seconds: float) -> bool:
        """Wait up to `seconds` for the task to finish; True when it has."""
        with anyio.move_on_after(max(0.0, seconds)):
            await record.done.wait()
        return record.done.is_set()

    def recent_output(self, record: TaskRecord, max_chars: int = 4000) -> str:
        try:
            text = record.output_path.read_text(encoding="utf-8")
        except OSError:
            return ""
        return text if len(text) <= max_chars else "…" + text[-max_chars:]

    async def _execute(self, record: TaskRecord, job: Job) -> None:
        assert record.scope is not None
        try:
            with record.scope:
                async with self._limiter:
                    self._queue.remove(record.id)
                    record.state = "running"
                    record.started_at = record.last_activity = time.monotonic()
                    await self._run_watched(record, job)
        except Exception as exc:
            self._finish_failed(record, exc)
        finally:
            if record.id in self._queue:
                self._queue.remove(record.id)
            if not record.finished:
                self._finish_cancelled(record)
            if record.state != "completed":
                record.processes.kill_all()
            self._append_output(record, f"\n{record.result_text}\n")
            self._write_transcript(record.transcript.finished, record.state, record.result_text or "")
            record.done.set()

    async def _run_watched(self, record: TaskRecord, job: Job) -> None:
        timed_out: str | None = None
        async with anyio.create_task_group() as group:

            async def run() -> None:
                try:
                    result = await job(record, lambda event: self._on_event(record, event))
                except Exception as exc:
                    self._finish_failed(record, exc)
                else:
                    self._finish_completed(record, result)
                group.cancel_scope.cancel()

            async def watch() -> None:
                nonlocal timed_out
                while True:
                    now = time.monotonic()
                    if now - (record.started_at or now) >= self.limits.task_timeout:
                        timed_out = f"Task exceeded its time limit of {self.limits.task_timeout:g} s"
                    elif now - record.last_activity >= self.limits.idle_timeout:
                        timed_out = (
                            f"Task made no progress (no model reply or tool result) for {self.limits.idle_timeout:g} s"
                        )
                    if timed_out:
                        group.cancel_scope.cancel()
                        return
                    await anyio.sleep(min(1.0, self.limits.idle_timeout / 4, self.limits.task_timeout / 4))

            group.start_soon(run)
            group.start_soon(watch)
        if timed_out and not record.finished:
            self._finish_failed(record, RunError(timed_out))

    async def _on_event(self, record: TaskRecord, event: RunEvent) -> None:
        record.last_activity = time.monotonic()
        if isinstance(event, TurnStarted):
            record.turn, record.max_turns = event.turn, event.max_turns
        elif isinstance(event, ModelResponded):
            record.usage += event.usage
        elif isinstance(event, ToolStarted):
            record.tool_uses += 1
        elif isinstance(event, MessageAppended):
            self._write_transcript(record.transcript.message, event.message)
        line = describe_event(event)
        if line:
            self._append_output(record, line)
        for listener in list(record.listeners):
            try:
                await listener(event)
            except Exception:
                logger.exception("a task listener failed; the task goes on")

    # Task files are written inline: appending a line to a local file costs microseconds, a thread hop ~250 us.
    def _write_transcript(self, write: Callable[..., None], *args: object) -> None:
        try:
            write(*args)
        except OSError:
            logger.warning("could not write a transcript line", exc_info=True)

    def _append_output(self, record: TaskRecord, text: str) -> None:
        try:
            with record.output_path.open("a", encoding="utf-8", errors="backslashreplace") as out:
                out.write(self._redact(text))
        except OSError:
            logger.warning("could not write output file %s", record.output_path)

    def _finish_completed(self, record: TaskRecord, result: RunResult) -> None:
        record.result = result
        self._finish(record, "completed", completed_text(record, result, max_chars=self.limits.max_result_chars))

    def _finish_failed(self, record: TaskRecord, exc: Exception) -> None:
        message = exc.message if isinstance(exc, SubagentsError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, SubagentsError):
            logger.error("task %s crashed", record.id, exc_info=exc)
        self._finish(record, "failed", failure_text(record, message))

    def _finish_cancelled(self, record: TaskRecord) -> None:
        interrupted = record.stop_requested == "interrupted"
        message = interrupted_message(record.id) if interrupted else stopped_message(record)
        self._finish(record, "interrupted" if interrupted else "stopped", failure_text(record, message))

    def _finish(self, record: TaskRecord, state: TaskState, text: str) -> None:
        record.state = state
        record.result_text = self._redact(text)
