"""Asking the person about a tool call: the question, the answer, the denial a run records, and the board of a task
tree's open questions, which every place the person may be (a host call, the App view, the dashboard, the command
line) reads and answers. Nothing here knows MCP."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import anyio

from ..core.json_values import JsonObject

AnswerKind: TypeAlias = Literal["allowed", "declined", "unanswered"]
QuestionKind: TypeAlias = Literal["call", "trust"]
"""What a question is about: one tool call, or whether to trust the project folder a task is about to run in (its
own hooks, MCP servers and allow rules: allow trusts it, deny does not, and either answer is remembered)."""
Choice: TypeAlias = Literal["allow", "always", "deny"]
"""What the person answers: this call only, calls like it from now on, or no."""
CHOICES: tuple[Choice, ...] = ("allow", "always", "deny")

TARGET_ARGUMENTS = ("command", "file_path", "notebook_path", "url", "path", "pattern", "query")
"""The arguments that say what a call touches, in the order one is picked as its target."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionQuestion:
    agent: str
    tool: str
    arguments: JsonObject
    reason: str
    """Why the call needs approval, and the rule that would allow it without asking."""
    suggestion: str | None = None
    """The allow rule an "always allow" answer adds (the narrowest that allows this call); None when no allow rule
    would spare the question (an ask rule decided, or only the managed policy's rules count)."""
    project: str | None = None
    """The project folder of the run: where an "always allow" answer writes its rule."""
    call_id: str = ""
    """The tool call it is about: a task resumed after a restart tells the model this call waited and never ran."""
    kind: QuestionKind = "call"
    """"trust": the question about trusting `project` before the task starts (`arguments` lists what the folder's
    own files would add); `tool` then names no tool."""

    def summary(self, limit: int = 300) -> str:
        text = json.dumps(self.arguments, ensure_ascii=False)
        return text if len(text) <= limit else text[:limit] + "…"

    def target(self) -> str | None:
        """What the call touches (the command, the file, the URL), whole; None for a tool without one."""
        for name in TARGET_ARGUMENTS:
            value = self.arguments.get(name)
            if isinstance(value, str) and value:
                return value
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What became of a question. Only `allowed` lets the call run; every other kind says why nobody allowed it."""

    kind: AnswerKind
    always: bool = False
    """For `allowed`: the person allowed calls like it from now on (the question's suggestion was added)."""
    by: str | None = None
    """Who answered: the host's principal, or the person at the terminal or the dashboard."""
    via: str | None = None
    """Where the answer was given: the host's form, the App view, the dashboard, `tasks answer`, the terminal."""
    waited_s: float | None = None
    """For `unanswered`: how long the question stayed open; None when it was never asked (an earlier one timed out)."""

    @property
    def allowed(self) -> bool:
        return self.kind == "allowed"

    def why_not(self) -> str:
        """One sentence on why the call did not get the person's approval."""
        where = f" ({self.via})" if self.via else ""
        match self.kind:
            case "allowed":
                return f"The person allowed this call{where}."
            case "declined":
                return f"The person denied this call{where}."
            case "unanswered" if self.waited_s is not None:
                return f"Nobody answered the permission question within {self.waited_s:g} s (--ask-timeout)."
            case "unanswered":
                return (
                    "Nobody was asked: an earlier permission question of this task went unanswered, so the task "
                    "stops asking until its host calls about it again."
                )

    def denial_reason(self, rule_reason: str) -> str:
        """The whole reason a denied call gives: what happened to the question, then what would allow the call."""
        return f"{self.why_not()} {rule_reason}"


def allowed(*, by: str | None = None, via: str | None = None, always: bool = False) -> Answer:
    return Answer(kind="allowed", by=by, via=via, always=always)


def declined(*, by: str | None = None, via: str | None = None) -> Answer:
    return Answer(kind="declined", by=by, via=via)


ALLOWED = allowed()
DECLINED = declined()

Asker = Callable[[PermissionQuestion], Awaitable[Answer]]
"""Asks the person about one tool call and returns what became of the question."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Denial:
    tool: str
    arguments: str
    reason: str


@dataclass(eq=False, slots=True, kw_only=True)
class OpenQuestion:
    """A question waiting for the person: where it comes from, when it was asked, and once settled, its answer."""

    id: str
    task_id: str
    """The task whose call asks (a nested task's, when its agent asks)."""
    question: PermissionQuestion
    asked_at: float
    """Wall-clock time (`time.time()`) when it was asked."""
    settled: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None
    forms: set[object] = field(default_factory=lambda: set())
    """The host connections showing it in a form right now: one is not shown the same question twice at once."""


class QuestionBoard:
    """The questions a task tree waits on. Asking posts the question under an unguessable id and waits until
    someone settles it; whoever shows questions to the person (a host call, the App view, the dashboard, the
    command line) reads `waiting()` and settles by id. The first answer wins; later ones find it closed."""

    def __init__(self) -> None:
        self._open: dict[str, OpenQuestion] = {}
        self._posted = anyio.Event()
        self.asked = 0
        """How many questions were ever posted (progress notifications count them, so they keep rising)."""

    def post(self, question: PermissionQuestion, *, task_id: str) -> OpenQuestion:
        """Put `question` on the board; wait on the entry's `settled`, and `withdraw` it when done waiting."""
        entry = OpenQuestion(
            id=f"permission-{secrets.token_urlsafe(16)}", task_id=task_id, question=question, asked_at=time.time()
        )
        self._open[entry.id] = entry
        self.asked += 1
        self._posted.set()
        self._posted = anyio.Event()
        return entry

    def withdraw(self, question_id: str) -> None:
        """Take a question off the board unanswered (its wait timed out, or the task ended)."""
        self._open.pop(question_id, None)

    async def ask(self, question: PermissionQuestion, *, task_id: str = "") -> Answer:
        """Post `question` and wait for its answer (the caller bounds the wait)."""
        entry = self.post(question, task_id=task_id)
        try:
            await entry.settled.wait()
        finally:
            self.withdraw(entry.id)
        assert entry.answer is not None
        return entry.answer

    def mirror(self, entries: list[OpenQuestion]) -> None:
        """Make the open questions those of `entries` (the board of a task another replica runs, as its transcript
        says): new ones are posted under their own ids, answered ones go."""
        kept = {entry.id for entry in entries}
        for question_id in [question_id for question_id in self._open if question_id not in kept]:
            self.withdraw(question_id)
        fresh = [entry for entry in entries if entry.id not in self._open]
        for entry in fresh:
            self._open[entry.id] = entry
            self.asked += 1
        if fresh:
            self._posted.set()
            self._posted = anyio.Event()

    def waiting(self) -> list[OpenQuestion]:
        """The open questions, oldest first."""
        return list(self._open.values())

    def get(self, question_id: str) -> OpenQuestion | None:
        return self._open.get(question_id)

    def settle(self, question_id: str, answer: Answer) -> OpenQuestion | None:
        """Deliver an answer; the question it settled, or None when it is not open (answered before, timed out, or
        never asked)."""
        entry = self._open.pop(question_id, None)
        if entry is None:
            return None
        entry.answer = answer
        entry.settled.set()
        return entry

    async def wait_for_new(self, seen: Container[str] = (), *, besides: object = None) -> OpenQuestion:
        """Wait until a question not in `seen` (nor in a form of the connection `besides`) is open, and return the
        oldest such."""
        while True:
            fresh = next(iter(self.unseen(seen, besides=besides)), None)
            if fresh is not None:
                return fresh
            await self._posted.wait()

    def unseen(self, seen: Container[str] = (), *, besides: object = None) -> list[OpenQuestion]:
        return [entry for entry in self._open.values() if entry.id not in seen and besides not in entry.forms]
