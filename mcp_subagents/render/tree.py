"""A task's tree: each nested task with its agent, model, state, stop reason, turns, tokens and cost, for
`TaskOutput`, `tasks show`, the dashboard and the App view. Each entry's figures are its own subtree's: what it and
the tasks below it counted (the tokens of a nested task still running count in its parent's once it ends; its cost
counts as it spends)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..models.pricing import format_usd
from ..tasks.files import TaskSnapshot
from ..tasks.outcome import TaskOutcome
from ..tasks.record import TaskRecord
from .inert import inert


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeEntry:
    level: int
    """1 for a task the shown task launched, 2 for one that task launched, and so on."""
    task_id: str
    agent: str
    description: str
    model: str
    state: str
    stop: str
    """How it ended (`stop_reason`); "" while it runs."""
    turns: int
    tokens: int
    cost_usd: float | None


def stop_reason(outcome: TaskOutcome | None) -> str:
    """One word for how a task ended: `end_turn` (the agent finished), `max_turns`, `max_tokens`, `hook_stopped`;
    a failure's kind (`error`, `idle`, `wall_clock`, `budget`, `stalled`); `stopped`, `interrupted`."""
    if outcome is None:
        return ""
    if outcome.state == "completed":
        return "end_turn" if outcome.stop == "completed" else outcome.stop
    if outcome.state == "failed":
        return outcome.failure or "error"
    return outcome.state


def record_entry(level: int, record: TaskRecord) -> TreeEntry:
    """A task of this process (running, or read back from its transcript)."""
    counts = record.outcome.counts if record.outcome is not None else None
    if counts is not None:
        turns, tokens = counts.turns + counts.nested.turns, counts.usage.total_tokens
    else:
        resources = record.resources
        turns = record.progress.turn + resources.descendant_counts.turns
        tokens = (record.progress.usage + resources.descendant_usage).total_tokens
    return TreeEntry(
        level=level,
        task_id=record.id,
        agent=record.agent,
        description=record.description,
        model=record.model,
        state=record.state,
        stop=stop_reason(record.outcome),
        turns=turns,
        tokens=tokens,
        cost_usd=record.cost_usd(),
    )


def snapshot_entry(level: int, snapshot: TaskSnapshot) -> TreeEntry:
    """A task as its files tell it."""
    outcome = snapshot.outcome
    nested = outcome.counts.nested.turns if outcome is not None and outcome.counts is not None else 0
    header = snapshot.header
    return TreeEntry(
        level=level,
        task_id=header.task_id,
        agent=header.agent,
        description=header.description,
        model=header.model,
        state=snapshot.state,
        stop=stop_reason(outcome),
        turns=snapshot.turns + nested,
        tokens=snapshot.tokens,
        cost_usd=snapshot.cost_usd,
    )


def tree_lines(entries: Iterable[TreeEntry]) -> list[str]:
    """One line per nested task, indented by level, made inert (names and descriptions come from files and
    models)."""
    lines: list[str] = []
    for entry in entries:
        ended = f": {entry.stop}" if entry.stop and entry.stop not in (entry.state, "end_turn") else ""
        figures = [entry.model or "model unknown", f"{entry.turns} turn(s)", f"{entry.tokens:,} tokens"]
        if entry.cost_usd is not None:
            figures.append(format_usd(entry.cost_usd))
        text = (
            f"{'  ' * (entry.level - 1)}- {entry.task_id} {entry.agent}: {entry.description} "
            f"[{entry.state}{ended}] {' · '.join(figures)}"
        )
        lines.append(inert(text, one_line=True))
    return lines


def tree_rows(entries: Sequence[TreeEntry]) -> list[dict[str, Any]]:
    """The entries as data (the dashboard's and the App view's)."""
    return [asdict(entry) for entry in entries]
