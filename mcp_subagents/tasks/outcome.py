"""How a task ended, as data: what a transcript's end line stores and what `render` turns into the host's text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter

from ..agent.file_changes import FileChanges
from ..agent.loop import StopKind
from ..agent.mcp_servers.problem import ServerProblem
from ..agent.worktrees import WorktreeReport
from ..core.messages import Usage
from ..permissions.asking import Denial, PermissionQuestion

FinishedState: TypeAlias = Literal["completed", "failed", "stopped", "interrupted"]
FINISHED_STATES: frozenset[FinishedState] = frozenset({"completed", "failed", "stopped", "interrupted"})
FailureKind: TypeAlias = Literal["error", "wall_clock", "idle", "budget", "stalled"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall:
    """A running task that has made no real progress: `silent` (no model reply or tool result) or `repeating` (the
    same tool call with the same arguments, `REPEATED_CALLS` or more times in a row)."""

    kind: Literal["silent", "repeating"]
    seconds: float
    """How long: since its last event (silent), or since the first of the repeated calls (repeating)."""
    tool: str = ""
    """repeating: the tool called again and again; silent: the tools running meanwhile, comma-separated ("" for
    none: the model has not answered)."""
    repeats: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class NestedCounts:
    """What the tasks a task's agent launched, and theirs, counted: the tokens and cost are in the task's own
    `usage` and `cost_usd` already."""

    tasks: int = 0
    turns: int = 0
    tool_uses: int = 0

    def plus(self, child: RunCounts) -> NestedCounts:
        """These counts and a finished nested task's, with the tasks below it."""
        return NestedCounts(
            tasks=self.tasks + 1 + child.nested.tasks,
            turns=self.turns + child.turns + child.nested.turns,
            tool_uses=self.tool_uses + child.tool_uses + child.nested.tool_uses,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCounts:
    turns: int
    """The task's own model requests (`nested.turns` has those of the tasks below it)."""
    tool_uses: int
    usage: Usage
    """Tokens of the task and of every task below it."""
    duration_s: float
    cost_usd: float | None = None
    """What the task and every task below it cost in USD; None when the model has no price."""
    nested: NestedCounts = field(default_factory=NestedCounts)
    """The tasks below it (none for a transcript written before they were counted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskOutcome:
    state: FinishedState
    counts: RunCounts | None = None
    """None when nothing was measured (a task an earlier server process left running)."""
    text: str = ""
    """completed: the agent's final text, whole."""
    stop: StopKind = "completed"
    """completed: whether the agent finished, hit the turn limit, or was cut at the output token limit."""
    failure: FailureKind | None = None
    """failed: an error, or which time limit ran out."""
    error: str = ""
    """failed with an error: what went wrong."""
    limit_s: float = 0.0
    """failed on a time limit: the limit in seconds."""
    stall: Stall | None = None
    """failed on `--stall-timeout`: the stall that lasted that long."""
    budget_usd: float = 0.0
    """failed on its budget: the budget in USD (what it spent is `counts.cost_usd`)."""
    budget_source: str = ""
    """failed on its budget: where the budget was set (`--max-budget-usd`, an agent's `maxBudgetUsd`)."""
    budget_task: str = ""
    """failed on a budget it shared: the ancestor whose budget it was ("" for the task's own)."""
    budget_spent_usd: float | None = None
    """failed on a budget it shared: what that ancestor and the tasks under it had spent."""
    turns_allowed: int = 0
    """completed with stop `max_turns` because the requests a Task call's `max_turns` allowed its tree ran out: how
    many it allowed (0 when the task reached a turn limit of its own)."""
    turns_task: str = ""
    """...and the task that call started."""
    denials: tuple[Denial, ...] = ()
    stop_reason: str = ""
    """completed with stop `hook_stopped`: the reason the hook gave."""
    worktree: WorktreeReport | None = None
    """`isolation: worktree`: the worktree kept (with what changed) or removed."""
    server_problems: tuple[ServerProblem, ...] = ()
    files: FileChanges | None = None
    """The files the task (and the tasks it launched) created, modified and deleted; None for a task that never ran
    (or one written before the list existed)."""
    waited_for: PermissionQuestion | None = None
    """interrupted: the question the task was waiting on when the server stopped (resuming it asks again)."""
    rendered: str | None = None
    """Only for an outcome read from a transcript written before outcomes were data: the text as rendered then."""

    @property
    def is_error(self) -> bool:
        """Whether the host gets it as a `<task_error>` with `isError`: every ending but completion."""
        return self.state != "completed"


def redacted(outcome: TaskOutcome, redact: Callable[[str], str]) -> TaskOutcome:
    """The outcome with every text it carries passed through `redact`."""
    denials = tuple(
        Denial(tool=d.tool, arguments=redact(d.arguments), reason=redact(d.reason)) for d in outcome.denials
    )
    rendered = None if outcome.rendered is None else redact(outcome.rendered)
    problems = tuple(ServerProblem(p.name, redact(p.reason)) for p in outcome.server_problems)
    files = None if outcome.files is None else _redacted_files(outcome.files, redact)
    return replace(
        outcome,
        text=redact(outcome.text),
        error=redact(outcome.error),
        denials=denials,
        rendered=rendered,
        stop_reason=redact(outcome.stop_reason),
        server_problems=problems,
        files=files,
    )


def _redacted_files(changes: FileChanges, redact: Callable[[str], str]) -> FileChanges:
    files = tuple(replace(change, path=redact(change.path)) for change in changes.files)
    return replace(changes, files=files, root=redact(changes.root))


@cache
def _adapter() -> TypeAdapter[TaskOutcome]:
    return TypeAdapter(TaskOutcome)


def encode_outcome(outcome: TaskOutcome) -> dict[str, Any]:
    return _adapter().dump_python(outcome, mode="json", exclude={"rendered"})


def decode_outcome(data: Any) -> TaskOutcome:
    return _adapter().validate_python(data)
