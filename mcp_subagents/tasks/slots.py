"""Places to run under `--max-concurrent`: every task takes one, nested tasks included.

A task that waits for the tasks it launched lends its own place to them, one at a time (`Lender`); the others wait
for a free place like any task. So a tree always goes on (its first waiting task has its parent's place), and with
`--max-concurrent 1` it runs one task after another. Places go to the waiting tasks in the order they asked.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import anyio


@dataclass(eq=False, slots=True)
class Lender:
    """A running task's own place, lent to one of its nested tasks at a time while it waits for them."""

    busy: bool = False
    waiting: deque[Ticket] = field(default_factory=lambda: deque[Ticket]())


@dataclass(frozen=True, slots=True)
class Grant:
    """A place held: lent by `lender`, or one of the shared places when `lender` is None."""

    lender: Lender | None


@dataclass(eq=False, slots=True)
class Ticket:
    """A task waiting for a place, in the shared queue and in its parent's `Lender` queue alike."""

    granted: anyio.Event = field(default_factory=anyio.Event)
    grant: Grant | None = None
    abandoned: bool = False

    @property
    def waiting(self) -> bool:
        return self.grant is None and not self.abandoned


class Slots:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        """Shared places held (a lent place counts once, for the task that lends it)."""
        self._waiting: deque[Ticket] = deque()

    def take_now(self, lender: Lender | None = None) -> Grant | None:
        """A place at once (the lender's, else a shared one), or None when the task must wait for one."""
        if lender is not None and not lender.busy:
            lender.busy = True
            return Grant(lender)
        if self.used < self.capacity:  # places are handed to waiting tasks as they free up: none is waiting
            self.used += 1
            return Grant(None)
        return None

    async def take(self, lender: Lender | None = None) -> Grant:
        """Wait for the lender's place or a shared one, whichever frees first for this task."""
        grant = self.take_now(lender)
        if grant is not None:
            return grant
        ticket = Ticket()
        self._waiting.append(ticket)
        if lender is not None:
            lender.waiting.append(ticket)
        try:
            await ticket.granted.wait()
        except BaseException:
            ticket.abandoned = True
            if ticket.grant is not None:  # handed over just as the task was stopped: pass it on
                self.give_back(ticket.grant)
            raise
        assert ticket.grant is not None
        return ticket.grant

    def give_back(self, grant: Grant) -> None:
        """Hand the place to the first task waiting for it, or free it."""
        queue = self._waiting if grant.lender is None else grant.lender.waiting
        while queue:
            ticket = queue.popleft()
            if ticket.waiting:
                ticket.grant = grant
                ticket.granted.set()
                return
        if grant.lender is not None:
            grant.lender.busy = False
        else:
            self.used -= 1
