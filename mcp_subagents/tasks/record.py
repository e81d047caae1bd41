"""One task: who it is, where it stands, how it ended, and what its run shares with the host while it runs."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

import anyio

from ..agent.file_changes import FileChanges
from ..agent.loop import RunEvent, RunResult
from ..agent.worktrees import WorktreeReport
from ..core.messages import Message, Usage
from ..core.principals import LOCAL_PRINCIPAL
from ..models.pricing import ModelPrice, SideSpend
from ..permissions.asking import Answer, Denial, OpenQuestion, PermissionQuestion, QuestionBoard
from ..tools.base import ProcessGroups
from .outcome import FINISHED_STATES, NestedCounts, ServerProblem, Stall, TaskOutcome
from .slots import Lender
from .transcripts import TranscriptHeader, TranscriptWriter

TaskState: TypeAlias = Literal["queued", "running", "waiting", "completed", "failed", "stopped", "interrupted"]
"""`waiting`: running, but blocked on a permission question until the person answers it."""


@dataclass(frozen=True, slots=True)
class CarriedTask:
    """A task this replica of a team takes over from a replica that stopped: its id and creation time go on, its
    agent runs it, its conversation so far (read back from the team's store) is where it goes on from."""

    id: str
    created: float
    agent: str
    history: tuple[Message, ...]
    turns: int = 0
    """Model requests it made before (they count against its `maxTurns` and its Task call's `max_turns`)."""
    tool_uses: int = 0
    usage: Usage = field(default_factory=Usage)
    """What it spent before (it counts against its budget)."""

    def progress(self) -> TaskProgress:
        """The task goes on counting its turns, tool uses and spending from where it was."""
        return TaskProgress(turn=self.turns, tool_uses=self.tool_uses, usage=self.usage)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskBudget:
    usd: float
    source: str
    """Where it was set, as the person would look for it: `--max-budget-usd`, `maxBudgetUsd of agent X`."""
    holder: str | None = None
    """None for the task's own budget; for a nested task whose ancestors had less left than its own, the ancestor
    whose budget it shares (`usd` is then what remained of it when the task started)."""


@dataclass(slots=True, kw_only=True)
class TurnAllowance:
    """The model requests a Task call's `max_turns` allows its task and every task below it, shared among them."""

    limit: int
    holder: str
    """The task the call started."""
    used: int = 0

    @property
    def spent(self) -> bool:
        return self.used >= self.limit


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetWarning:
    """The task has spent most of its budget (`BUDGET_WARNING_SHARE`); it goes on until the budget is spent."""

    turn: int
    spent_usd: float
    budget: TaskBudget


BUDGET_WARNING_SHARE = 0.8


@dataclass(frozen=True, slots=True)
class QuestionAsked:
    """A call of the task waits for the person: the question is on its tree's board until someone answers."""

    entry: OpenQuestion


@dataclass(frozen=True, slots=True)
class QuestionAnswered:
    """The question was answered (or went unanswered until `--ask-timeout`)."""

    entry: OpenQuestion
    answer: Answer


REPEATED_CALLS = 3
"""The same tool call with the same arguments this many times in a row flags the task as repeating itself."""


@dataclass(frozen=True, slots=True)
class Stalled:
    """The task has gone `--stall-after` seconds without progress, or has just started repeating a call."""

    stall: Stall


TaskEvent: TypeAlias = RunEvent | BudgetWarning | QuestionAsked | QuestionAnswered | Stalled
"""What a task's listeners receive: the run's own events and the task manager's notices."""
Listener = Callable[[TaskEvent], Awaitable[None]]
Job = Callable[["TaskRecord", Listener], Awaitable[RunResult]]
"""Runs the subagent for a record, feeding every loop event to the listener."""


class TaskObserver(Protocol):
    """Follows every task from start to end (OpenTelemetry traces)."""

    def started(self, record: TaskRecord, trace_meta: Mapping[str, Any] | None) -> Listener: ...
    def finished(self, record: TaskRecord, outcome: TaskOutcome) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskLimits:
    max_concurrent: int = 10
    task_timeout: float = 1800.0
    idle_timeout: float = 600.0
    max_result_chars: int = 80_000
    ask_timeout: float = 3600.0
    """How long a permission question waits for the person's answer; the task's idle and wall-clock limits stop
    meanwhile."""
    stall_after: float = 120.0
    """A running task without a model reply or tool result for this long is shown as stalled (0: never)."""
    stall_timeout: float = 0.0
    """A task stalled (silent or repeating a call) for this long is stopped (0: never)."""


@dataclass(slots=True)
class CallRepeats:
    """The run of identical tool calls the task's latest call belongs to."""

    signature: int | None = None
    tool: str = ""
    count: int = 0
    since: float = 0.0
    """`time.monotonic()` when the first call of the run started."""


@dataclass(slots=True, kw_only=True)
class TaskProgress:
    turn: int = 0
    max_turns: int = 0
    tool_uses: int = 0
    usage: Usage = field(default_factory=Usage)
    started_at: float | None = None
    last_activity: float = field(default_factory=time.monotonic)
    budget_warned: bool = False
    current_tools: list[str] = field(default_factory=lambda: [])
    """Tools running right now (several read-only ones may run at once)."""
    denials_written: int = 0
    """How many of the run's denials the transcript holds already."""
    last_text: str = ""
    """The latest text the model wrote: the result of a task stopped when its tree's `max_turns` ran out."""
    cost_passed_up: float = 0.0
    """How much of its own cost the task has added to its ancestors' `descendant_cost`."""
    repeats: CallRepeats = field(default_factory=CallRepeats)

    def elapsed(self) -> float:
        return 0.0 if self.started_at is None else time.monotonic() - self.started_at


@dataclass(eq=False, slots=True, kw_only=True)
class RunResources:
    """What a run shares with the outside while it runs. The host reaches it only through `TaskManager.attach`."""

    processes: ProcessGroups = field(default_factory=ProcessGroups)
    """Processes the task's Bash commands left running in the background; killed unless the task completes."""
    denials: list[Denial] = field(default_factory=lambda: [])
    listeners: list[Listener] = field(default_factory=lambda: [])
    unattended: bool = False
    """A question went unanswered until `--ask-timeout`: later ones are denied at once until a host call attaches
    anew or someone answers."""
    idle_holds: int = 0
    """Questions waiting for an answer and nested tasks waiting for a place right now; the idle limit does not run
    while there are any."""
    clock_holds: int = 0
    """The same waits, for the wall-clock limit, which does not run while there are any."""
    clock_left: float = 0.0
    """What the wall-clock limit had left when it stopped."""
    questions: QuestionBoard = field(default_factory=QuestionBoard)
    """The open permission questions of the task and of the tasks below it (kept on the task a host launched)."""
    descendant_usage: Usage = field(default_factory=Usage)
    """Tokens the tasks it launched (and theirs) used: counted in its own usage once they end."""
    descendant_counts: NestedCounts = field(default_factory=NestedCounts)
    """How many tasks it launched (and theirs) have ended, and their turns and tool uses."""
    descendant_cost: float = 0.0
    """What the tasks it launched (and theirs) spent, counted in its cost (and against its budget) as they spend."""
    worktree: WorktreeReport | None = None
    """What became of its worktree (`isolation: worktree`), once the run is over."""
    server_problems: list[ServerProblem] = field(default_factory=lambda: [])
    """Its MCP servers that did not start."""
    telemetry: object | None = None
    """The task's open spans, when traces are on (`telemetry.py`)."""
    side_spend: SideSpend = field(default_factory=SideSpend)
    """What the task's tools spent on model requests of their own (WebFetch, WebSearch)."""
    file_changes: FileChanges | None = None
    """The files its run created, modified and deleted, once the run is over (None: the run never started)."""
    child_files: list[tuple[str, FileChanges]] = field(default_factory=lambda: [])
    """The files each nested task it launched changed, by task id, as each ended."""


@dataclass(eq=False, slots=True, kw_only=True)
class TaskRecord:
    id: str
    agent: str
    description: str
    output_path: Path
    transcript: TranscriptWriter
    background: bool = False
    created: float = field(default_factory=time.time)
    resumed_from: str | None = None
    owner: str = LOCAL_PRINCIPAL
    """The principal that started the task; only it can read, stop or resume it."""
    model: str = ""
    """The model id the task runs on ("" when not known, as for tasks of an earlier process)."""
    effort: str | None = None
    """The effort its model is asked for; None when none is sent."""
    model_note: str = ""
    """When the agent file's model was overridden: what ran instead, and by what."""
    price: ModelPrice | None = None
    """The model's price; None when it has none, and then the task reports tokens only."""
    budget: TaskBudget | None = None
    state: TaskState = "queued"
    progress: TaskProgress = field(default_factory=TaskProgress)
    outcome: TaskOutcome | None = None
    """How the task ended, once it has."""
    done: anyio.Event = field(default_factory=anyio.Event)
    opened: anyio.Event = field(default_factory=anyio.Event)
    """Set once the output file and the transcript exist and hold their first lines (created off the event loop)."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancelled by TaskStop and at shutdown."""
    idle: anyio.CancelScope | None = None
    """The idle limit of the running task: every run event pushes its deadline back."""
    clock: anyio.CancelScope | None = None
    """The wall-clock limit of the running task: pushed back by the time it waits for a person."""
    resources: RunResources = field(default_factory=RunResources)
    asking: PermissionQuestion | None = None
    """The question the task waits on while its state is waiting (an interrupted task's outcome keeps it)."""
    stop_requested: str | None = None
    """Why the task is being cancelled ("stopped", "interrupted"), or None when it is not."""
    parent: str | None = None
    """The task whose agent launched this one (a nested subagent); None for a task a host launched."""
    depth: int = 1
    """1 for a task a host launched, 2 for one its agent launched, and so on."""
    children: list[str] = field(default_factory=lambda: [])
    """The tasks this task's agent launched, in order."""
    turns: TurnAllowance | None = None
    """The `max_turns` of the Task call that started it, shared with the tasks it launches; None without one."""
    lends: Lender = field(default_factory=Lender)
    launch: Mapping[str, Any] | None = None
    """What another replica needs to carry the task on (a team's server): the request, the roots, the project."""
    """Its place under `--max-concurrent`, lent to the tasks it launched while it waits for them."""

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def active(self) -> bool:
        """Running, or waiting for the person in the middle of its run."""
        return self.state in ("running", "waiting")

    @property
    def is_error(self) -> bool:
        return self.outcome is not None and self.outcome.is_error

    def cost_usd(self) -> float | None:
        """What the task and the tasks it launched have spent so far (or in all, once finished); None without a
        price."""
        if self.outcome is not None and self.outcome.counts is not None:
            return self.outcome.counts.cost_usd
        return self.cost_of(self.progress.usage)

    def cost_of(self, usage: Usage) -> float | None:
        """`own_cost_of(usage)` plus what the tasks it launched spent; None without a price."""
        own = self.own_cost_of(usage)
        return None if own is None else own + self.resources.descendant_cost

    def own_cost_of(self, usage: Usage) -> float | None:
        """`usage` of the task's model, plus what its tools spent on their own requests; None without a price."""
        return None if self.price is None else self.price.cost(usage) + self.resources.side_spend.cost_usd


def transcript_header(record: TaskRecord, control: str | None) -> TranscriptHeader:
    """The first line of the task's transcript: who and what it is, and how to reach the process that runs it."""
    return TranscriptHeader(
        task_id=record.id,
        agent=record.agent,
        description=record.description,
        created=record.created,
        resumed_from=record.resumed_from,
        owner=record.owner,
        parent=record.parent,
        model=record.model,
        effort=record.effort,
        model_note=record.model_note,
        budget_usd=record.budget.usd if record.budget else None,
        pid=os.getpid(),
        control=control,
    )


MAX_TREE_LEVELS = 64
"""How far a task tree is followed (a tree is never deeper than --max-depth; this bounds a broken one)."""


def record_lineage(record: TaskRecord, find: Callable[[str], TaskRecord | None]) -> list[TaskRecord]:
    """The task, its parent, and so on up to the task a host launched, as far as `find` knows them."""
    chain = [record]
    while chain[-1].parent is not None and len(chain) < MAX_TREE_LEVELS:
        parent = find(chain[-1].parent)
        if parent is None:
            break
        chain.append(parent)
    return chain


def record_subtasks(record: TaskRecord, find: Callable[[str], TaskRecord | None]) -> list[tuple[int, TaskRecord]]:
    """The tasks its agent launched, and theirs, depth first, each with how far below `record` it is."""
    found: list[tuple[int, TaskRecord]] = []

    def walk(parent: TaskRecord, level: int) -> None:
        for child_id in parent.children:
            child = find(child_id)
            if child is not None and level < MAX_TREE_LEVELS:
                found.append((level, child))
                walk(child, level + 1)

    walk(record, 1)
    return found
