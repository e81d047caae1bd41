"""A task's permission question, from the call that asks to the answer: parked on the board of the task a host
launched, shown as `waiting` wherever the task is shown, answered by whoever reaches the person first.

While the question waits, the idle and wall-clock limits of the task (and of the tasks waiting on it) stop: time
spent waiting for a person is neither idleness nor work. Unanswered after `--ask-timeout`, the call is denied and
later questions of the tree are denied at once, until a host calls about the task again or someone answers.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import ExitStack, contextmanager

import anyio

from ..permissions.asking import Answer, OpenQuestion, PermissionQuestion
from .record import QuestionAnswered, QuestionAsked, TaskEvent, TaskRecord

Tell = Callable[[TaskRecord, TaskEvent], Awaitable[None]]


@contextmanager
def limits_paused(records: Sequence[TaskRecord], idle_timeout: float, *, clock: bool = True) -> Generator[None]:
    """The idle limits of `records` stop while the block runs, and start again from scratch after it; with `clock`,
    their wall-clock limits stop too, and go on after it with the time they had left. Waiting for a person stops
    both; waiting for a place to run stops the idle limit only."""
    with ExitStack() as stack:
        for record in records:
            stack.enter_context(_idle_paused(record, idle_timeout))
            if clock:
                stack.enter_context(_clock_paused(record))
        yield


@contextmanager
def _clock_paused(record: TaskRecord) -> Generator[None]:
    resources, clock = record.resources, record.clock
    if clock is None:  # not running yet (or any more): no limit to stop
        yield
        return
    if resources.clock_holds == 0:
        resources.clock_left = clock.deadline - anyio.current_time()
        clock.deadline = float("inf")
    resources.clock_holds += 1
    try:
        yield
    finally:
        resources.clock_holds -= 1
        if resources.clock_holds == 0:
            clock.deadline = anyio.current_time() + resources.clock_left


@contextmanager
def _idle_paused(record: TaskRecord, idle_timeout: float) -> Generator[None]:
    resources = record.resources
    resources.idle_holds += 1
    if record.idle is not None:
        record.idle.deadline = float("inf")
    try:
        yield
    finally:
        resources.idle_holds -= 1
        if resources.idle_holds == 0:
            record.progress.last_activity = time.monotonic()  # its silence starts now, not before the wait
        if resources.idle_holds == 0 and record.idle is not None:
            record.idle.deadline = anyio.current_time() + idle_timeout


async def ask_person(
    lineage: Sequence[TaskRecord],
    question: PermissionQuestion,
    *,
    ask_timeout: float,
    idle_timeout: float,
    tell: Tell,
) -> Answer:
    """Ask about a call of `lineage[0]`'s run; the question waits on the board of `lineage[-1]` (the task a host
    launched), where every place that can reach the person finds it."""
    record, resources = lineage[0], lineage[-1].resources
    if resources.unattended:
        return Answer(kind="unanswered")
    entry = resources.questions.post(question, task_id=record.id)
    try:
        record.state, record.asking = "waiting", question
        await tell(record, QuestionAsked(entry))
        with limits_paused(lineage, idle_timeout), anyio.move_on_after(ask_timeout):
            await entry.settled.wait()
        record.asking = None  # a cancelled wait keeps it: an interrupted task's outcome names the question
    finally:
        resources.questions.withdraw(entry.id)
        if record.state == "waiting":
            record.state = "running"
    answer = entry.answer
    if answer is None:
        resources.unattended = True
        answer = Answer(kind="unanswered", waited_s=ask_timeout)
    else:
        resources.unattended = False
    await tell(record, QuestionAnswered(entry, answer))
    return answer


def open_questions(root: TaskRecord) -> list[OpenQuestion]:
    """The questions waiting in the tree of `root` (the task a host launched), oldest first."""
    return root.resources.questions.waiting()
