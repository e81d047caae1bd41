"""The answer of a permission check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

Decision: TypeAlias = Literal["allow", "ask", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")
"""From the most to the least permissive."""


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str
    """Which rule or mode decided, and for ask/deny how the user could allow the call."""
    rule: str | None = None
    """The rule (or permission map entry) that decided; None when the mode's default did."""
    suggestion: str | None = None
    """For ask: the allow rule that would let calls like this one run without asking; None when none would (an ask
    rule decided)."""


def strictest(decisions: list[Decision]) -> Decision | None:
    """deny over ask over allow; None for no decisions."""
    return max(decisions, key=DECISIONS.index) if decisions else None
