"""Stuck or looping tasks: a running task with no model reply or tool result for `--stall-after` seconds, or that
calls the same tool with the same arguments `REPEATED_CALLS` times in a row, is flagged (a `Stalled` notice to its
listeners, and `stall_of` wherever a task is shown); with `--stall-timeout`, one stalled that long is stopped.

A task waiting for a person's answer, or for a place to run, is not stalled: it waits, and the silence ends when
the wait does. A task waiting for the nested tasks it launched is not either: their stalls are told.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from contextlib import contextmanager

import anyio
from anyio.abc import TaskGroup

from ..agent.loop import ToolStarted
from ..core.names import AGENT_TOOLS
from .outcome import Stall
from .record import REPEATED_CALLS, CallRepeats, Stalled, TaskEvent, TaskLimits, TaskProgress, TaskRecord

Tell = Callable[[TaskRecord, TaskEvent], Awaitable[None]]


def call_signature(name: str, arguments: object) -> int:
    """Equal for two calls of one tool with equal arguments (whatever their keys' order)."""
    return hash((name, json.dumps(arguments, sort_keys=True, default=str)))


def note_call(progress: TaskProgress, event: TaskEvent, now: float) -> Stalled | None:
    """Count a tool call in the run of identical calls it belongs to; the notice when that run has just reached
    `REPEATED_CALLS`."""
    if not isinstance(event, ToolStarted):
        return None
    if count_call(progress.repeats, event.call.name, event.call.arguments, now) != REPEATED_CALLS:
        return None
    return Stalled(current_stall(progress, now))


def count_call(repeats: CallRepeats, name: str, arguments: object, at: float) -> int:
    """Add a call made at `at` to the run of identical calls (a call unlike the run's starts a new one); how many
    the run has now."""
    signature = call_signature(name, arguments)
    if signature != repeats.signature:
        repeats.signature, repeats.tool, repeats.count, repeats.since = signature, name, 0, at
    repeats.count += 1
    return repeats.count


def current_stall(progress: TaskProgress, now: float) -> Stall:
    """How long the task has gone without real progress, and why (both monotonic seconds)."""
    repeats = progress.repeats
    if repeats.count >= REPEATED_CALLS:
        return Stall(kind="repeating", seconds=now - repeats.since, tool=repeats.tool, repeats=repeats.count)
    running = ", ".join(progress.current_tools)
    return Stall(kind="silent", seconds=max(0.0, now - progress.last_activity), tool=running)


def stall_of(record: TaskRecord, *, after: float, now: float | None = None) -> Stall | None:
    """The task's stall, when it is running and repeating itself, or silent for `after` seconds (0: never silent);
    None otherwise. `now`: `time.monotonic()` unless given."""
    if not can_stall(record):
        return None
    stall = current_stall(record.progress, time.monotonic() if now is None else now)
    if stall.kind == "repeating" or (after > 0 and stall.seconds >= after):
        return stall
    return None


def can_stall(record: TaskRecord) -> bool:
    """Running, and waiting neither for a person, nor for a place to run, nor for a nested task (whose own stall is
    the one to tell)."""
    return (
        record.state == "running"
        and not record.resources.idle_holds
        and not waits_for_nested(record.progress.current_tools)
    )


def waits_for_nested(running_tools: Iterable[str]) -> bool:
    return any(tool in AGENT_TOOLS for tool in running_tools)


class StallWatch:
    """Watches one running task: tells its listeners when it falls silent, and stops it once it has been stalled
    for `stall_timeout` seconds. Sleeps until the next moment either could happen; polls nothing."""

    def __init__(self, record: TaskRecord, limits: TaskLimits, tell: Tell) -> None:
        self._record = record
        self._after = limits.stall_after
        self._timeout = limits.stall_timeout
        self._tell = tell
        self.scope = anyio.CancelScope()
        """The task's run goes in it: the watch cancels it when the stall lasts too long (`stopped` says so)."""
        self._watching = anyio.CancelScope()
        self.stopped: Stall | None = None
        """The stall the task was stopped for, once it has been."""

    @contextmanager
    def running(self, group: TaskGroup | None) -> Generator[None]:
        """Watch while the block runs (in `group`, which outlives it)."""
        if group is not None and (self._after > 0 or self._timeout > 0):
            group.start_soon(self._watch, name=f"task {self._record.id} stall watch")
        try:
            yield
        finally:
            self._watching.cancel()

    async def _watch(self) -> None:
        told: float | None = None  # the silence already told (by its last event's time)
        with self._watching:
            while True:
                now = time.monotonic()
                ongoing = current_stall(self._record.progress, now) if can_stall(self._record) else None
                if ongoing is not None and self._timeout > 0 and ongoing.seconds >= self._timeout:
                    self.stopped = ongoing
                    self.scope.cancel()
                    return
                stall = stall_of(self._record, after=self._after, now=now)
                silence = self._record.progress.last_activity
                if stall is not None and stall.kind == "silent" and told != silence:
                    told = silence
                    await self._tell(self._record, Stalled(stall))
                await anyio.sleep(self._next_look(now, told))

    def _next_look(self, now: float, told: float | None) -> float:
        """Seconds until the task could next turn silent or reach the stall timeout (at most `stall_after` or the
        timeout, so that a wait that ended is noticed)."""
        progress = self._record.progress
        moments: list[float] = []
        if self._after > 0 and told != progress.last_activity:
            moments.append(progress.last_activity + self._after - now)
        if self._timeout > 0:
            moments.append(self._timeout - current_stall(progress, now).seconds)
        ahead = [moment for moment in moments if moment > 0]
        return min(ahead or [value for value in (self._after, self._timeout) if value > 0])
