"""The texts a task's output file is written in: given to the task manager by the runtime (the renderer is a layer
above the tasks), so the file reads as the host's view does."""

from __future__ import annotations

from typing import Protocol

from .outcome import TaskOutcome
from .record import BudgetWarning, TaskEvent, TaskRecord


class TaskTexts(Protocol):
    def event_line(self, event: TaskEvent) -> str | None:
        """The output file's line for a run event (a turn, a tool, a budget warning), or None for other events."""
        ...

    def budget_warning(self, warning: BudgetWarning) -> str:
        """The transcript's notice that the task has spent most of its budget."""
        ...

    def end(self, record: TaskRecord, outcome: TaskOutcome) -> str:
        """The output file's last block: the result the host gets, never cut."""
        ...
