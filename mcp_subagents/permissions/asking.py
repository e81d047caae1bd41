"""Asking the person about a tool call: the question, the answer, the denial a run records, and the questions a
task holds open while a 2026-era host asks its person between two calls. Nothing here knows MCP."""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

import anyio

from ..core.json_values import JsonObject

AnswerKind: TypeAlias = Literal["allowed", "declined", "dismissed", "unanswered", "cannot_ask", "background"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionQuestion:
    agent: str
    tool: str
    arguments: JsonObject
    reason: str
    """Why the call needs approval, and the rule that would allow it without asking."""

    def summary(self, limit: int = 300) -> str:
        text = json.dumps(self.arguments, ensure_ascii=False)
        return text if len(text) <= limit else text[:limit] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What became of a question. Only `allowed` lets the call run; every other kind says why nobody allowed it."""

    kind: AnswerKind
    waited_s: float | None = None
    """For `unanswered`: how long the question stayed open; None when it was never asked (an earlier one timed out)."""
    failure: str | None = None
    """For `unanswered`: the error the host gave instead of an answer."""

    @property
    def allowed(self) -> bool:
        return self.kind == "allowed"

    def why_not(self) -> str:
        """One sentence on why the call did not get the person's approval."""
        match self.kind:
            case "allowed":
                return "The person allowed this call."
            case "declined":
                return "The person declined this call."
            case "dismissed":
                return (
                    "The permission question was dismissed without an answer "
                    "(by the person, or by a host that cannot show it)."
                )
            case "cannot_ask":
                return "Nobody could be asked: this host did not advertise elicitation, so it cannot show the question."
            case "background":
                return "Nobody could be asked: the task runs in the background, where no one sees questions."
            case "unanswered" if self.failure is not None:
                return f"Nobody could be asked: the host failed to show the question ({self.failure})."
            case "unanswered" if self.waited_s is not None:
                return f"Nobody answered the permission question within {self.waited_s:g} s."
            case "unanswered":
                return "Nobody was asked: an earlier permission question of this task went unanswered."

    def denial_reason(self, rule_reason: str) -> str:
        """The whole reason a denied call gives: what happened to the question, then what would allow the call."""
        return f"{self.why_not()} {rule_reason}"


ALLOWED = Answer(kind="allowed")
DECLINED = Answer(kind="declined")
DISMISSED = Answer(kind="dismissed")
CANNOT_ASK = Answer(kind="cannot_ask")
BACKGROUND = Answer(kind="background")

Asker = Callable[[PermissionQuestion], Awaitable[Answer]]
"""Asks the person about one tool call and returns what became of the question."""


async def cannot_ask(_question: PermissionQuestion) -> Answer:
    """The asker of a host that advertised no way to ask its person."""
    return CANNOT_ASK


@dataclass(frozen=True, slots=True, kw_only=True)
class Denial:
    tool: str
    arguments: str
    reason: str


@dataclass(eq=False, slots=True)
class _OpenQuestion:
    question: PermissionQuestion
    settled: anyio.Event
    answer: Answer | None = None


class OpenQuestions:
    """The questions a task waits on until a later call of its host brings the answers (2026-07-28 round trips).

    An `Asker`: asking posts the question under an unguessable id and waits until `settle` delivers its answer (the
    task manager bounds the wait). `wait_until_open` wakes the foreground call, which sends every open question to
    the host and returns; the host's next call settles them by id.
    """

    def __init__(self) -> None:
        self._open: dict[str, _OpenQuestion] = {}
        self._posted = anyio.Event()

    async def __call__(self, question: PermissionQuestion) -> Answer:
        question_id = f"permission-{secrets.token_urlsafe(16)}"
        entry = _OpenQuestion(question, anyio.Event())
        self._open[question_id] = entry
        self._posted.set()
        self._posted = anyio.Event()
        try:
            await entry.settled.wait()
        finally:
            self._open.pop(question_id, None)
        assert entry.answer is not None
        return entry.answer

    def waiting(self) -> dict[str, PermissionQuestion]:
        return {question_id: entry.question for question_id, entry in self._open.items()}

    def settle(self, question_id: str, answer: Answer) -> bool:
        """Deliver an answer; False when the question is not open (answered before, timed out, or never asked)."""
        entry = self._open.pop(question_id, None)
        if entry is None:
            return False
        entry.answer = answer
        entry.settled.set()
        return True

    async def wait_until_open(self) -> None:
        while not self._open:
            await self._posted.wait()
