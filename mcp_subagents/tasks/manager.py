"""TaskManager: task ids, the concurrency queue, time limits, stop, foreground attachment and asking, output files,
and recovery after a restart."""

from __future__ import annotations

import bisect
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..agent.loop import Compacted, MessageAppended, ModelResponded, RunResult, ToolFinished, ToolStarted, TurnStarted
from ..core.errors import SubagentsError, TaskNotFoundError
from ..core.messages import Message
from ..core.principals import LOCAL_PRINCIPAL
from ..core.processes import ProcessGroups
from ..core.redaction import Redactor
from ..models.pricing import ModelPrice
from ..permissions.asking import Answer, OpenQuestion, PermissionQuestion
from .endings import cancelled, changed_files, completed, failed, stalled, timed_out
from .finished import close_interrupted_transcripts, load_finished
from .outcome import TaskOutcome, redacted
from .questions import ask_person, limits_paused
from .record import (
    BudgetWarning,
    CarriedTask,
    Job,
    Listener,
    QuestionAnswered,
    QuestionAsked,
    Stalled,
    TaskBudget,
    TaskEvent,
    TaskLimits,
    TaskObserver,
    TaskProgress,
    TaskRecord,
    TurnAllowance,
    record_lineage,
    record_subtasks,
    transcript_header,
)
from .release import MemoryRelease
from .slots import Lender, Slots
from .stalls import StallWatch, note_call
from .task_files import TaskFiles, recent_output, write_transcript
from .team_link import TeamLink
from .texts import TaskTexts
from .transcripts import TranscriptWriter
from .tree_limits import before_request, budgets_to_warn, check_allowance, check_budgets, pass_cost_up, price_notes

logger = logging.getLogger(__name__)

TASK_ID_BYTES = 16
FINISHED_SHOWN = 20
"""Finished tasks the App view lists besides the live ones (the newest of each person's)."""
IDLE_SLACK_SECONDS = 1.0
"""At most this much (or 1 % of the idle limit) is added to a task's idle deadline when its events push it back."""


class TaskManager:
    """Owns every task of this server process. Enter `running()` once, which holds the task group; or hand it a task
    group that outlives it with `serve_in`, and `close` it before that group ends."""

    def __init__(self, *, state_dir: Path, limits: TaskLimits, texts: TaskTexts, secrets: Iterable[str] = ()) -> None:
        """`texts`: what the output files are written in (the runtime passes the renderer's)."""
        self.limits = limits
        self._texts = texts
        self.output_dir = state_dir / "tasks"
        self.redact = Redactor(secrets)
        self._records: dict[str, TaskRecord] = {}
        """Queued and running tasks. A finished task is only on disk (its transcript): memory holds none of it."""
        self._files = TaskFiles(self.redact)
        self._lingering: list[ProcessGroups] = []
        """Processes that completed tasks left running (`cmd &`), killed when the server stops."""
        self._newest_finished: dict[str, list[tuple[float, str]]] = {}
        """The newest `FINISHED_SHOWN` finished tasks of each principal, as (-created, id), so newest first: all this
        process keeps of its finished tasks, whose transcripts hold the rest."""
        self._release = MemoryRelease()
        self._queue: list[str] = []
        """Tasks waiting for a place under `--max-concurrent`, in the order they asked."""
        self._slots = Slots(limits.max_concurrent)
        self._group: TaskGroup | None = None
        self.control_name: str | None = None
        """The name of this process's control channel under the state directory, written into each header."""
        self.observer: TaskObserver | None = None
        """Sees every task start and end (traces); None when nothing is watching."""
        self.team: TeamLink | None = None
        """The team's shared store when this server is one replica of several (`--database-url`)."""

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[TaskManager]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        async with anyio.create_task_group() as group:
            self.serve_in(group)
            try:
                yield self
            finally:
                self.close()
                group.cancel_scope.cancel()

    def serve_in(self, group: TaskGroup) -> None:
        """Run tasks in `group` from now on; `close` must come before the group ends. The output folder must exist
        (`state.prepare_state_dir` makes it): this touches no file, so it can run on the event loop."""
        self._group = group
        group.start_soon(self._close_interrupted_transcripts, time.time())

    def close(self) -> None:
        """Interrupt the tasks still running and kill every process a task left; no task starts after this."""
        self._group = None
        for record in list(self._records.values()):
            if not record.finished:
                self._cancel(record, "interrupted")
            record.resources.processes.kill_all()  # background processes must not outlive the server
        for processes in self._lingering:
            processes.kill_all()

    def in_background(self, func: Callable[..., Coroutine[Any, Any, object]], *args: object, name: str) -> None:
        """Run `func(*args)` in the manager's task group: it outlives the host call that started it, not the
        server."""
        self._running_group().start_soon(func, *args, name=name)

    def _running_group(self) -> TaskGroup:
        if self._group is None:
            raise SubagentsError("The task manager is not running")
        return self._group

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
        record = self._records.get(task_id)
        if record is None and self.team is not None:
            record = self.team.elsewhere(task_id)
        return record or self._load_finished(task_id)

    async def fetch(self, task_id: str, *, principal: str) -> TaskRecord:
        """`get` (raises as it does), once a team's task another replica runs or ran is read again."""
        if self.team is not None and task_id.strip() not in self._records:
            await self.team.refresh(task_id.strip())
        return self.get(task_id, principal=principal)

    def transcript_path(self, task_id: str) -> Path:
        return self.output_dir / f"{task_id}.jsonl"

    def _load_finished(self, task_id: str) -> TaskRecord | None:
        """A finished task (of this process or an earlier one) as its transcript tells it; not kept in memory."""
        return load_finished(task_id, self.output_dir, self.redact)

    async def _close_interrupted_transcripts(self, started: float) -> None:
        """Mark tasks an earlier process left running as interrupted, so they report so and can be resumed."""
        closed = await anyio.to_thread.run_sync(close_interrupted_transcripts, self.output_dir, self.redact, started)
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
        parent: TaskRecord | None = None,
        model: str = "",
        effort: str | None = None,
        model_note: str = "",
        price: ModelPrice | None = None,
        budget: TaskBudget | None = None,
        turns: int | None = None,
        trace_meta: Mapping[str, Any] | None = None,
        launch: Mapping[str, Any] | None = None,
        carried: CarriedTask | None = None,
    ) -> TaskRecord:
        """Start a task. A task with a `parent` is a nested subagent: it belongs to the parent's owner, and runs in
        its parent's place under `--max-concurrent` (lent while the parent waits for it) or in a free one. `turns`
        (a Task call's `max_turns`) caps the model requests of the task and of every task below it, together.
        `trace_meta`: the launching request's `_meta` (its `traceparent`). A team's replica: `launch`, what another
        needs to carry the task on; `carried`, a task taken over from another (id, files and creation time go on)."""
        group = self._running_group()
        task_id = carried.id if carried is not None else self.new_id()
        record = TaskRecord(
            id=task_id,
            agent=agent,
            description=description,
            background=background,
            output_path=self.output_dir / f"{task_id}.output",
            transcript=TranscriptWriter(self.transcript_path(task_id), self.redact, self._copy(task_id, "transcript")),
            created=carried.created if carried is not None else time.time(),
            launch=launch,
            resumed_from=resumed_from,
            owner=parent.owner if parent is not None else owner,
            parent=parent.id if parent is not None else None,
            depth=parent.depth + 1 if parent is not None else 1,
            model=model,
            effort=effort,
            model_note=model_note,
            price=price,
            budget=budget,
            turns=None if turns is None else TurnAllowance(limit=turns, holder=task_id),
            progress=carried.progress() if carried is not None else TaskProgress(),
        )
        if parent is not None:
            parent.children.append(task_id)
        self._files.hold_output(record, self._copy(task_id, "output"))
        self._records[task_id] = record
        self._queue.append(task_id)
        self._announce(record, trace_meta)
        opening = self._opening(record, history, carried=carried is not None)
        group.start_soon(self._files.open, record, opening, name=f"task {task_id} files")
        lender = parent.lends if parent is not None else None
        group.start_soon(self._execute, record, job, lender, name=f"task {task_id}")
        return record

    def _announce(self, record: TaskRecord, trace_meta: Mapping[str, Any] | None) -> None:
        """Tell the observer, and a team's store (at once: a queued task is the team's too)."""
        if self.team is not None:
            self.team.join(record)
        if self.observer is not None:
            record.resources.listeners.append(self.observer.started(record, trace_meta))
        if record.turns is not None and record.progress.turn:  # carried on from another replica: turns spent there
            record.turns.used = record.progress.turn

    def _opening(self, record: TaskRecord, history: Sequence[Message], *, carried: bool) -> Callable[[], None]:
        """The header and first output lines; or, carried on from another replica, a line that says so."""
        if carried:
            return partial(self._files.append_output, record, f"[task {record.id}] carried on by another replica\n")
        resumed = f" (resuming task {record.resumed_from})" if record.resumed_from else ""
        lines = [f"[task {record.id}] {record.agent}: {record.description}{resumed}\n", *_model_warning(record)]
        lines += price_notes(record)
        header = transcript_header(record, self.control_name)
        return partial(self._files.write_opening, record, header, tuple(history), lines)

    def _copy(self, task_id: str, file: str) -> Callable[[str], None] | None:
        return self.team.copier(task_id, file) if self.team is not None else None

    def lineage(self, record: TaskRecord) -> list[TaskRecord]:
        """The task, its parent, and so on up to the task a host launched."""
        return record_lineage(record, self._find)

    def subtasks(self, record: TaskRecord) -> list[tuple[int, TaskRecord]]:
        """The tasks its agent launched, and theirs, depth first, each with how far below `record` it is."""
        return record_subtasks(record, self._find)

    def log_line(self, record: TaskRecord, line: str) -> None:
        """A line in the task's output file about something beside the model's turns (a hook that failed)."""
        self._files.append_output(record, f"{line.rstrip()}\n")

    async def stop(self, task_id: str, *, grace: float = 5.0) -> TaskRecord:
        """Cancel a queued or running task and wait until it has cleaned up (its processes are gone); a team's task
        another replica runs is stopped there."""
        record = self.request_stop(task_id)
        if self.team is not None and record.id not in self._records and not record.finished:
            await self.team.stop_elsewhere(record)
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

    def tasks_of(self, principal: str) -> list[TaskRecord]:
        """The tasks `principal` started in this process, newest first: every live one, and the newest
        `FINISHED_SHOWN` finished ones (read back from their transcripts)."""
        owned = [record for record in self._records.values() if record.owner == principal]
        done = self._newest_finished.get(principal, [])
        owned += [record for _, task_id in done if (record := self._load_finished(task_id)) is not None]
        return sorted(owned, key=lambda record: record.created, reverse=True)

    async def list_of(self, principal: str) -> list[TaskRecord]:
        """`tasks_of`; a team's replica adds the newest tasks `principal` started on the other replicas."""
        owned = self.tasks_of(principal)
        if self.team is None:
            return owned
        seen = {record.id for record in owned}
        for task_id in await self.team.recent_of(principal, FINISHED_SHOWN):
            if task_id not in seen and (record := self._find(task_id)) is not None:
                owned.append(record)
        return sorted(owned, key=lambda record: record.created, reverse=True)

    def live_tasks(self) -> list[TaskRecord]:
        """The queued and running tasks of this process."""
        return [record for record in self._records.values() if not record.finished]

    def live(self, task_id: str) -> TaskRecord | None:
        """The queued or running task `task_id` of this process, whoever started it."""
        return self._records.get(task_id)

    def stop_own(self, task_id: str) -> bool:
        """Stop `task_id` if this process runs it (a request from outside: `tasks stop`, the dashboard)."""
        record = self._records.get(task_id)
        if record is None or record.finished:
            return False
        self._cancel(record, "stopped")
        return True

    def _cancel(self, record: TaskRecord, why: str) -> None:
        record.stop_requested = why
        record.scope.cancel()

    async def wait(self, record: TaskRecord, seconds: float) -> bool:
        """Wait up to `seconds` for the task to finish; True when it has."""
        with anyio.move_on_after(max(0.0, seconds)):
            await record.done.wait()
        return record.done.is_set()

    recent_output = staticmethod(recent_output)

    # ---- the foreground call ----------------------------------------------------------------------------------------

    @contextmanager
    def attach(self, record: TaskRecord, listener: Listener) -> Generator[None]:
        """A host call takes part in a running task: while the block runs, `listener` receives every run event (the
        call shows the task's questions to its person itself). A host calling again also ends a timed-out question's
        silence: the task asks again."""
        resources = record.resources
        resources.listeners.append(listener)
        resources.unattended = False
        try:
            yield
        finally:
            resources.listeners.remove(listener)

    @contextmanager
    def watch(self, record: TaskRecord, listener: Listener) -> Generator[None]:
        """While the block runs, `listener` receives the run's events (a terminal's status line); it answers no
        questions."""
        record.resources.listeners.append(listener)
        try:
            yield
        finally:
            record.resources.listeners.remove(listener)

    async def ask(self, record: TaskRecord, question: PermissionQuestion) -> Answer:
        """Ask the person about a call of `record`'s run (see `questions.ask_person`)."""
        limits = self.limits
        return await ask_person(
            self.lineage(record),
            question,
            ask_timeout=limits.ask_timeout,
            idle_timeout=limits.idle_timeout,
            tell=self._tell,
        )

    def root(self, record: TaskRecord) -> TaskRecord:
        """The task a host launched, in whose tree `record` runs."""
        return self.lineage(record)[-1]

    def open_questions(self, record: TaskRecord) -> list[OpenQuestion]:
        """The questions waiting in `record`'s tree (on the board of the task a host launched), oldest first."""
        return self.root(record).resources.questions.waiting()

    def answer(self, record: TaskRecord, question_id: str, answer: Answer) -> OpenQuestion | None:
        """Settle an open question of `record`'s tree; the question, or None when it is not open any more."""
        return self.root(record).resources.questions.settle(question_id, answer)

    # ---- running a task ---------------------------------------------------------------------------------------------

    async def _execute(self, record: TaskRecord, job: Job, lender: Lender | None) -> None:
        """Wait for a place (in launch order: nothing is awaited before asking for one), then run. The task's files
        are created meanwhile (`TaskFiles.open`); the run and the end line wait for them."""
        outcome: TaskOutcome | None = None
        try:
            with record.scope:
                grant = self._slots.take_now(lender)
                if grant is None:
                    with limits_paused(self.lineage(record)[1:], self.limits.idle_timeout, clock=False):
                        grant = await self._slots.take(lender)
                try:
                    self._queue.remove(record.id)
                    if self.team is not None:  # the task is the team's before it runs, or fails
                        outcome = await self.team.joined(record)
                    outcome = outcome or await self._run(record, job)
                finally:
                    self._slots.give_back(grant)
        finally:
            with anyio.CancelScope(shield=True):
                await record.opened.wait()
            self._finish(record, outcome or cancelled(record))

    async def _run(self, record: TaskRecord, job: Job) -> TaskOutcome:
        await record.opened.wait()
        record.state = "running"
        record.progress.started_at = record.progress.last_activity = time.monotonic()
        write_transcript(record.transcript.running)
        return await self._run_with_limits(record, job)

    async def _run_with_limits(self, record: TaskRecord, job: Job) -> TaskOutcome:
        """Run the job under the wall-clock and idle limits, each a cancel scope (every run event resets idle's),
        and under the stall watch."""
        now, limits, watch = anyio.current_time(), self.limits, StallWatch(record, self.limits, self._tell)
        with anyio.CancelScope(deadline=now + limits.task_timeout) as clock:
            record.clock = clock
            with anyio.CancelScope(deadline=now + limits.idle_timeout) as idle:
                record.idle = idle
                result: RunResult | None = None
                try:
                    with watch.running(self._group), watch.scope:
                        check_allowance(self.lineage(record))  # a tree that has spent it starts nothing
                        check_budgets(record, self.lineage(record))
                        result = await job(record, partial(self._on_event, record))
                except Exception as exc:
                    return failed(record, exc)
                finally:
                    record.idle = record.clock = None
                if result is None and watch.stopped is not None:  # the watch cancelled the run
                    return stalled(record, watch.stopped, limits.stall_timeout)
                assert result is not None
                return completed(record, result)
            return timed_out(record, "idle", limits.idle_timeout)
        return timed_out(record, "wall_clock", limits.task_timeout)

    async def _on_event(self, record: TaskRecord, event: TaskEvent) -> None:
        """Raises:
        TurnsSpentError, BudgetExceededError: the next model request (`TurnStarted`) may not be made, or the
            response just received spent the last of a budget; the run ends with it.
        """
        if isinstance(event, TurnStarted):
            before_request(record, self.lineage(record))
        if not isinstance(event, Stalled):  # a notice that nothing happens is not something happening
            self._keep_busy(record)
        repeating = note_call(record.progress, event, time.monotonic())
        spent = self._track(record, event)
        if spent:
            progress = record.progress
            write_transcript(
                record.transcript.usage, turn=progress.turn, usage=progress.usage, cost_usd=record.cost_usd()
            )
        line = self._texts.event_line(event)
        if line:
            self._files.append_output(record, line)
        for listener in list(record.resources.listeners):
            try:
                await listener(event)
            except Exception:
                logger.exception("a task listener failed; the task goes on")
        if repeating is not None:
            await self._tell(record, repeating)
        if self.team is not None and isinstance(event, MessageAppended):
            await self.team.written(record.id)  # a completed turn or tool result is the team's before the run goes on
        if spent:
            check_budgets(record, self.lineage(record))
            for holder, spent, budget in budgets_to_warn(self.lineage(record)):
                await self._on_event(holder, BudgetWarning(turn=holder.progress.turn, spent_usd=spent, budget=budget))

    async def _tell(self, record: TaskRecord, event: TaskEvent) -> None:
        """An event of the task manager's own: handled as a run event of `record`, and shown to the host calls
        attached to the task a host launched as well."""
        await self._on_event(record, event)
        root = self.root(record)
        if root is not record:
            for listener in list(root.resources.listeners):
                try:
                    await listener(event)
                except Exception:
                    logger.exception("a task listener failed; the task goes on")

    def _keep_busy(self, record: TaskRecord) -> None:
        """Push the idle limit back, for the task and every task waiting on it (a parent is busy while its nested
        task works), except while a permission question waits for a person."""
        now, idle_timeout = anyio.current_time(), self.limits.idle_timeout
        for busy in self.lineage(record):
            busy.progress.last_activity = time.monotonic()
            if busy.idle is not None and not busy.resources.idle_holds and busy.idle.deadline < now + idle_timeout:
                # A little later than needed, so that a busy task reschedules its timer once per slack, not at
                # every event; the limit is never shorter than configured.
                busy.idle.deadline = now + idle_timeout + min(IDLE_SLACK_SECONDS, idle_timeout / 100)

    def _track(self, record: TaskRecord, event: TaskEvent) -> bool:
        """Update the task's progress and transcript from one event; True when the event spent tokens."""
        progress = record.progress
        if isinstance(event, TurnStarted):
            progress.turn, progress.max_turns = event.turn, event.max_turns
            progress.current_tools.clear()
        elif isinstance(event, ModelResponded):
            progress.usage += event.usage
            if event.message.text.strip():
                progress.last_text = event.message.text
            return True
        elif isinstance(event, ToolStarted):
            progress.tool_uses += 1
            progress.current_tools.append(event.call.name)
        elif isinstance(event, ToolFinished):
            if event.call.name in progress.current_tools:
                progress.current_tools.remove(event.call.name)
            self._record_new_denials(record)
        elif isinstance(event, MessageAppended):
            write_transcript(record.transcript.message, event.message)
        elif isinstance(event, Compacted):
            progress.usage += event.usage
            write_transcript(record.transcript.compaction, event.summary, event.reason, event.replaced)
            return True
        elif isinstance(event, BudgetWarning):
            write_transcript(record.transcript.notice, "budget_warning", self._texts.budget_warning(event))
        elif isinstance(event, QuestionAsked):
            write_transcript(record.transcript.question, event.entry)
        elif isinstance(event, QuestionAnswered):
            write_transcript(record.transcript.answer, event.entry, event.answer)
        elif isinstance(event, Stalled):  # pyright: ignore[reportUnnecessaryIsInstance]
            write_transcript(record.transcript.notice, "stalled", (self._texts.event_line(event) or "").strip())
        return False

    def _record_new_denials(self, record: TaskRecord) -> None:
        """Denials are collected by the permission gate; each new one also goes into the transcript, as it happens."""
        denials = record.resources.denials
        for denial in denials[record.progress.denials_written :]:
            write_transcript(record.transcript.denial, denial)
        record.progress.denials_written = len(denials)

    # ---- how a task ends --------------------------------------------------------------------------------------------

    def _finish(self, record: TaskRecord, outcome: TaskOutcome) -> None:
        """The only place a task ends: record the outcome, clean up, write the files, wake the waiters."""
        if record.id in self._queue:
            self._queue.remove(record.id)
        pass_cost_up(record, self.lineage(record))  # what its tools spent after its last model response
        resources = record.resources
        outcome = replace(outcome, worktree=resources.worktree, server_problems=tuple(resources.server_problems))
        outcome = replace(outcome, files=changed_files(resources))
        outcome = redacted(outcome, self.redact)
        record.outcome = outcome
        record.state = outcome.state
        if outcome.state != "completed":
            record.resources.processes.kill_all()
        self._files.append_output(record, f"\n{self._texts.end(record, outcome)}\n")
        self._files.release_output(record)
        write_transcript(record.transcript.finished, outcome, tuple(record.children))
        if self.observer is not None:
            try:
                self.observer.finished(record, outcome)
            except Exception:
                logger.exception("the task observer failed; the task ends all the same")
        record.done.set()
        # From here on the transcript is the task's record: whoever waited holds this object, later lookups read
        # the file. Only processes it left running stay, to be killed at shutdown.
        self._records.pop(record.id, None)
        self._remember_finished(record)
        if record.resources.processes.ids:
            self._lingering.append(record.resources.processes)
        self._release.task_finished(still_running=len(self._records))

    def _remember_finished(self, record: TaskRecord) -> None:
        """Keep the task among its owner's newest finished ones, if it is one of them."""
        newest = self._newest_finished.setdefault(record.owner, [])
        bisect.insort(newest, (-record.created, record.id))
        del newest[FINISHED_SHOWN:]


def _model_warning(record: TaskRecord) -> list[str]:
    """The output file's line when the agent file's model was overridden."""
    return [f"[Warning: {record.model_note}]\n"] if record.model_note else []
