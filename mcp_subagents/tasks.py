"""TaskManager: task ids, the concurrency queue, time limits, stop, foreground attachment and asking, output files,
and recovery after a restart."""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from .errors import SubagentsError, TaskNotFoundError
from .loop import Compacted, MessageAppended, ModelResponded, RunEvent, RunResult, ToolStarted, TurnStarted
from .messages import Message
from .outcome import FailureKind, RunCounts, TaskOutcome, redacted
from .permissions.asking import BACKGROUND, Answer, Asker, PermissionQuestion
from .principals import LOCAL_PRINCIPAL
from .redaction import Redactor
from .render import describe_event, outcome_text
from .task_record import Job, Listener, TaskLimits, TaskRecord
from .tools.base import ProcessGroups
from .transcripts import TranscriptHeader, TranscriptWriter, read_summary

logger = logging.getLogger(__name__)

TASK_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TASK_ID_BYTES = 16


class Attachment:
    """A foreground host call attached to a task: it receives the run's events and asks the person its questions."""

    def __init__(self) -> None:
        self.kept = False

    def keep_asker(self) -> None:
        """The host will come back with answers (a 2026-era round trip): its asker stays after this call ends."""
        self.kept = True


class TaskManager:
    """Owns every task of this server process. Enter `running()` once; it holds the task group."""

    def __init__(self, *, state_dir: Path, limits: TaskLimits, secrets: Iterable[str] = ()) -> None:
        self.limits = limits
        self.output_dir = state_dir / "tasks"
        self._redact = Redactor(secrets)
        self._records: dict[str, TaskRecord] = {}
        """Queued and running tasks. A finished task is only on disk (its transcript): memory holds none of it."""
        self._lingering: list[ProcessGroups] = []
        """Processes that completed tasks left running (`cmd &`), killed when the server stops."""
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
                for record in list(self._records.values()):
                    if not record.finished:
                        self._cancel(record, "interrupted")
                    record.resources.processes.kill_all()  # background processes must not outlive the server
                for processes in self._lingering:
                    processes.kill_all()
                group.cancel_scope.cancel()

    def new_id(self) -> str:
        """128 random bits: over HTTP an id is all that stands between a task and another person."""
        while (task_id := secrets.token_hex(TASK_ID_BYTES)) in self._records:
            pass
        return task_id

    def get(self, task_id: str, *, principal: str) -> TaskRecord:
        """A task `principal` started, in this process or in an earlier one on the same state directory.

        Raises:
            TaskNotFoundError: no such task, or it belongs to someone else (the same error, word for word).
        """
        record = self._find(task_id)
        if record is None or record.owner != principal:
            raise TaskNotFoundError(task_id.strip())
        return record

    def _find(self, task_id: str) -> TaskRecord | None:
        task_id = task_id.strip()
        return self._records.get(task_id) or self._load_finished(task_id)

    def transcript_path(self, task_id: str) -> Path:
        return self.output_dir / f"{task_id}.jsonl"

    def _load_finished(self, task_id: str) -> TaskRecord | None:
        """A finished task (of this process or an earlier one) as its transcript tells it; not kept in memory."""
        path = self.transcript_path(task_id)
        if not TASK_ID_PATTERN.match(task_id) or not path.is_file():
            return None
        summary = read_summary(path)
        if summary is None:
            return None
        header = summary.header
        outcome = summary.outcome or TaskOutcome(state="interrupted")
        record = TaskRecord(
            id=task_id,
            agent=header.agent,
            description=header.description,
            output_path=self.output_dir / f"{task_id}.output",
            transcript=TranscriptWriter(path, self._redact),
            created=header.created,
            resumed_from=header.resumed_from,
            owner=header.owner,
            state=outcome.state,
            outcome=outcome,
        )
        record.done.set()
        return record

    async def _close_interrupted_transcripts(self, started: float) -> None:
        """Mark tasks an earlier process left running as interrupted, so they report so and can be resumed."""

        def scan() -> list[str]:
            closed: list[str] = []
            for path in sorted(self.output_dir.glob("*.jsonl")):
                summary = read_summary(path)
                if summary is None or summary.header.created >= started:  # this process's own tasks
                    continue
                if summary.outcome is None:
                    TranscriptWriter(path, self._redact).finished(TaskOutcome(state="interrupted"))
                    closed.append(summary.header.task_id)
            return closed

        closed = await anyio.to_thread.run_sync(scan)
        if closed:
            logger.warning(
                "%d task(s) were interrupted when the previous server stopped; resume them with Task resume: %s",
                len(closed),
                ", ".join(closed),
            )

    def queue_position(self, record: TaskRecord) -> tuple[int, int] | None:
        """(position, queue length) of a queued task; None when it is not queued."""
        if record.id not in self._queue:
            return None
        return self._queue.index(record.id) + 1, len(self._queue)

    def start(
        self,
        *,
        agent: str,
        description: str,
        job: Job,
        background: bool = False,
        resumed_from: str | None = None,
        history: Sequence[Message] = (),
        owner: str = LOCAL_PRINCIPAL,
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
            owner=owner,
        )
        header = TranscriptHeader(
            task_id=task_id,
            agent=agent,
            description=description,
            created=record.created,
            resumed_from=resumed_from,
            owner=owner,
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
        """Ask a task to stop without waiting (used when the host cancels a foreground call).

        The caller has already looked the task up for its principal with `get`.
        """
        record = self._find(task_id)
        if record is None:
            raise TaskNotFoundError(task_id)
        if not record.finished:
            self._cancel(record, "stopped")
        return record

    def _cancel(self, record: TaskRecord, why: str) -> None:
        record.stop_requested = why
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

    # ---- the foreground call ----------------------------------------------------------------------------------------

    @contextmanager
    def attach(self, record: TaskRecord, *, listener: Listener, asker: Asker) -> Generator[Attachment]:
        """The one way a host call takes part in a running task: while the block runs, `listener` receives every run
        event and `asker` answers the task's permission questions. Leaving the block detaches both, unless the
        call keeps its asker for the round trip it starts (`Attachment.keep_asker`)."""
        resources = record.resources
        attachment = Attachment()
        resources.listeners.append(listener)
        resources.asker = asker
        resources.unattended = False
        try:
            yield attachment
        finally:
            resources.listeners.remove(listener)
            if not attachment.kept and resources.asker is asker:
                resources.asker = None

    async def ask(self, record: TaskRecord, question: PermissionQuestion) -> Answer:
        """Ask the attached host's person about a tool call of `record`'s run, waiting at most `ask_timeout`."""
        resources = record.resources
        if resources.unattended:
            return Answer(kind="unanswered")
        asker = resources.asker
        if asker is None:
            return BACKGROUND
        with self._idle_paused(record), anyio.move_on_after(self.limits.ask_timeout):
            try:
                return await asker(question)
            except Exception as exc:  # an asker should answer, not raise; a failing host is a question unanswered
                logger.warning("asking about %s failed: %s", question.tool, exc)
                return Answer(kind="unanswered", failure=f"{type(exc).__name__}: {exc}")
        # Nobody came back in time: later questions are not asked until a host call attaches again.
        resources.unattended = True
        return Answer(kind="unanswered", waited_s=self.limits.ask_timeout)

    @contextmanager
    def _idle_paused(self, record: TaskRecord) -> Generator[None]:
        """Waiting for a person is not idleness: the idle limit stops while a question is open."""
        resources = record.resources
        resources.asking += 1
        if record.idle is not None:
            record.idle.deadline = float("inf")
        try:
            yield
        finally:
            resources.asking -= 1
            if resources.asking == 0 and record.idle is not None:
                record.idle.deadline = anyio.current_time() + self.limits.idle_timeout

    # ---- running a task ---------------------------------------------------------------------------------------------

    async def _execute(self, record: TaskRecord, job: Job) -> None:
        outcome: TaskOutcome | None = None
        try:
            with record.scope:
                async with self._limiter:
                    self._queue.remove(record.id)
                    record.state = "running"
                    record.progress.started_at = record.progress.last_activity = time.monotonic()
                    outcome = await self._run_with_limits(record, job)
        finally:
            self._finish(record, outcome or self._cancelled(record))

    async def _run_with_limits(self, record: TaskRecord, job: Job) -> TaskOutcome:
        """Run the job under the wall-clock and idle limits, each a cancel scope; every run event resets idle's."""
        now = anyio.current_time()
        with anyio.CancelScope(deadline=now + self.limits.task_timeout):
            with anyio.CancelScope(deadline=now + self.limits.idle_timeout) as idle:
                record.idle = idle
                try:
                    result = await job(record, partial(self._on_event, record))
                except Exception as exc:
                    return self._failed(record, exc)
                finally:
                    record.idle = None
                return self._completed(record, result)
            return self._timed_out(record, "idle", self.limits.idle_timeout)
        return self._timed_out(record, "wall_clock", self.limits.task_timeout)

    async def _on_event(self, record: TaskRecord, event: RunEvent) -> None:
        progress = record.progress
        progress.last_activity = time.monotonic()
        if record.idle is not None and not record.resources.asking:
            record.idle.deadline = anyio.current_time() + self.limits.idle_timeout
        if isinstance(event, TurnStarted):
            progress.turn, progress.max_turns = event.turn, event.max_turns
        elif isinstance(event, ModelResponded):
            progress.usage += event.usage
        elif isinstance(event, ToolStarted):
            progress.tool_uses += 1
        elif isinstance(event, MessageAppended):
            self._write_transcript(record.transcript.message, event.message)
        elif isinstance(event, Compacted):
            progress.usage += event.usage
            self._write_transcript(record.transcript.compaction, event.summary, event.reason, event.replaced)
        line = describe_event(event)
        if line:
            self._append_output(record, line)
        for listener in list(record.resources.listeners):
            try:
                await listener(event)
            except Exception:
                logger.exception("a task listener failed; the task goes on")

    # ---- how a task ends --------------------------------------------------------------------------------------------

    def _counts(self, record: TaskRecord) -> RunCounts:
        progress = record.progress
        return RunCounts(
            turns=progress.turn, tool_uses=progress.tool_uses, usage=progress.usage, duration_s=progress.elapsed()
        )

    def _completed(self, record: TaskRecord, result: RunResult) -> TaskOutcome:
        counts = RunCounts(
            turns=result.turns, tool_uses=result.tool_uses, usage=result.usage, duration_s=result.duration_s
        )
        return TaskOutcome(
            state="completed",
            counts=counts,
            text=result.text,
            stop=result.stop,
            denials=tuple(record.resources.denials),
        )

    def _failed(self, record: TaskRecord, exc: Exception) -> TaskOutcome:
        message = exc.message if isinstance(exc, SubagentsError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, SubagentsError):
            logger.error("task %s crashed", record.id, exc_info=exc)
        return TaskOutcome(
            state="failed",
            counts=self._counts(record),
            failure="error",
            error=message,
            denials=tuple(record.resources.denials),
        )

    def _timed_out(self, record: TaskRecord, which: FailureKind, limit: float) -> TaskOutcome:
        return TaskOutcome(
            state="failed",
            counts=self._counts(record),
            failure=which,
            limit_s=limit,
            denials=tuple(record.resources.denials),
        )

    def _cancelled(self, record: TaskRecord) -> TaskOutcome:
        state = "interrupted" if record.stop_requested == "interrupted" else "stopped"
        return TaskOutcome(state=state, counts=self._counts(record), denials=tuple(record.resources.denials))

    def _finish(self, record: TaskRecord, outcome: TaskOutcome) -> None:
        """The only place a task ends: record the outcome, clean up, write the files, wake the waiters."""
        if record.id in self._queue:
            self._queue.remove(record.id)
        outcome = redacted(outcome, self._redact)
        record.outcome = outcome
        record.state = outcome.state
        if outcome.state != "completed":
            record.resources.processes.kill_all()
        self._append_output(record, f"\n{outcome_text(record, outcome, max_chars=None)}\n")
        self._write_transcript(record.transcript.finished, outcome)
        record.done.set()
        # From here on the transcript is the task's record: whoever waited holds this object, later lookups read
        # the file. Only processes it left running stay, to be killed at shutdown.
        self._records.pop(record.id, None)
        if record.resources.processes.ids:
            self._lingering.append(record.resources.processes)

    # Task files are written inline: appending a line to a local file costs microseconds, a thread hop ~250 us.
    def _write_transcript(self, write: Callable[..., None], *args: object) -> None:
        try:
            write(*args)
        except OSError:
            logger.warning("could not write a transcript line", exc_info=True)

    def _append_output(self, record: TaskRecord, text: str) -> None:
        try:
            with record.output_path.open("a", encoding="utf-8") as out:
                out.write(self._redact(text))
        except OSError:
            logger.warning("could not write output file %s", record.output_path)
