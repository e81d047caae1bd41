"""What the task manager asks of a team's shared store when the server is one replica of several (`--database-url`):
the store is below the runtime but above the tasks, so the manager sees it only through this protocol."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..permissions.asking import Choice
    from .outcome import TaskOutcome
    from .record import TaskRecord


@dataclass(frozen=True, slots=True)
class ForwardedAnswer:
    """An answer given on one replica to a question of a task another replica runs."""

    task_id: str
    """The task a host launched (whose board the question is on)."""
    question_id: str
    choice: Choice
    by: str
    via: str


class TeamLink(Protocol):
    def copier(self, task_id: str, file: str) -> Callable[[str], None]:
        """What the task's file (`transcript` or `output`) calls with each piece of text appended to it."""
        ...

    def join(self, record: TaskRecord) -> None:
        """Make the task the team's, starting now (its row is written; a task a host launched gets its workflow)."""
        ...

    async def joined(self, record: TaskRecord) -> TaskOutcome | None:
        """Wait until `join` is done; the task's failed outcome when the database refused it."""
        ...

    async def announced(self, task_id: str) -> None:
        """Wait until every replica can find the task (its row and first lines are in the database)."""
        ...

    async def written(self, task_id: str) -> None:
        """Wait until what the task's files got so far is in the database."""
        ...

    def elsewhere(self, task_id: str) -> TaskRecord | None:
        """A task another replica runs (or ran), as last read with `refresh`."""
        ...

    async def refresh(self, task_id: str) -> None:
        """Read the task from the database again when another replica runs (or ran) it."""
        ...

    async def recent_of(self, principal: str, limit: int) -> list[str]:
        """The newest tasks `principal` started on any replica, refreshed; their ids, newest first."""
        ...

    async def forward_answer(self, answer: ForwardedAnswer) -> None:
        """Send an answer to the replica that runs the task."""
        ...

    async def request_stop(self, task_id: str) -> None:
        """Ask the team to stop a task, without waiting."""
        ...

    async def keep_files(self) -> None:
        """Keep every task of the team written in this replica's state directory until cancelled."""
        ...

    async def stop_elsewhere(self, record: TaskRecord) -> None:
        """Stop a task another replica runs: it is told at once; one nobody runs any more is ended here."""
        ...
