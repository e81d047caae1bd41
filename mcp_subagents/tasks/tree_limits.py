"""What a task tree shares: the budgets and the `max_turns` allowances of the tasks above each task. A task's
spending counts in every ancestor's as it spends, and every model request of the tree takes a turn of each
allowance above it."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..core.errors import BudgetExceededError, TurnsSpentError
from .record import BUDGET_WARNING_SHARE, TaskBudget, TaskRecord

logger = logging.getLogger("mcp_subagents.tasks.manager")


def before_request(record: TaskRecord, lineage: Sequence[TaskRecord]) -> None:
    """A model request is about to be made: it needs a turn of every `max_turns` allowance above the task and
    room in every budget; it takes its turn of each.

    Raises:
        TurnsSpentError, BudgetExceededError.
    """
    check_budgets(record, lineage)
    check_allowance(lineage)
    for holder in lineage:
        if holder.turns is not None:
            holder.turns.used += 1


def check_allowance(lineage: Sequence[TaskRecord]) -> None:
    """Raises:
    TurnsSpentError: a `max_turns` the task shares with its ancestors has no request left.
    """
    for holder in lineage:
        if holder.turns is not None and holder.turns.spent:
            raise TurnsSpentError(limit=holder.turns.limit, holder=holder.id)


def budgets_to_warn(lineage: Sequence[TaskRecord]) -> list[tuple[TaskRecord, float, TaskBudget]]:
    """The holders of a budget above the task (or the task itself) that have passed most of it and were not warned
    yet, with what they spent; each is marked warned."""
    found: list[tuple[TaskRecord, float, TaskBudget]] = []
    for holder in lineage:
        budget, spent = holder.budget, holder.cost_usd()
        if budget is None or budget.holder is not None or spent is None or holder.progress.budget_warned:
            continue
        if spent >= budget.usd * BUDGET_WARNING_SHARE:
            holder.progress.budget_warned = True
            found.append((holder, spent, budget))
    return found


def check_budgets(record: TaskRecord, lineage: Sequence[TaskRecord]) -> None:
    """Count what the task spent in its ancestors' costs, and end it once it, or the tasks under one of its
    ancestors, spent that task's budget.

    Raises:
        BudgetExceededError: the budget of the task or of an ancestor is spent (the loop stops with it, before
            the next request).
    """
    pass_cost_up(record, lineage)
    for holder in lineage:
        budget, spent = holder.budget, holder.cost_usd()
        if budget is None or budget.holder is not None or spent is None:
            continue  # a budget shared with an ancestor is checked on the ancestor: its tree spends it
        if spent >= budget.usd:
            raise BudgetExceededError(
                budget_usd=budget.usd,
                spent_usd=spent,
                source=budget.source,
                holder=None if holder is record else holder.id,
                holder_agent=holder.agent,
            )


def pass_cost_up(record: TaskRecord, lineage: Sequence[TaskRecord]) -> None:
    """Add what the task spent since it last did to the cost of each of its ancestors."""
    own = record.own_cost_of(record.progress.usage)
    if own is None or own <= record.progress.cost_passed_up:
        return
    for ancestor in lineage[1:]:
        ancestor.resources.descendant_cost += own - record.progress.cost_passed_up
    record.progress.cost_passed_up = own


def price_notes(record: TaskRecord) -> list[str]:
    """The output file's line (also logged) saying that the task's model, which has no price, is counted at the
    dearest known price because a budget applies; none otherwise."""
    price = record.price
    if price is None or price.basis != "ceiling":
        return []
    note = (
        f"[budget] priced as the dearest known model, ${price.input:g}/${price.output:g} per million tokens, "
        f"because {record.model or 'this model'} has no price"
    )
    logger.warning("task %s: %s", record.id, note.removeprefix("[budget] "))
    return [note + "\n"]
