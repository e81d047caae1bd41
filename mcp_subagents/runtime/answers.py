"""Answering a subagent's permission question, from wherever the person is: the host's form, the App view, the
dashboard, `mcp-subagents tasks answer`, the terminal of `mcp-subagents run`. The first answer settles the question;
each records who gave it and where. "Always allow" also adds the question's rule: at once for this server's runs in
the project, and to the project's `.claude/settings.local.json` for later sessions. For the question whether to trust
a folder (`trust_dialog`), whose answer is remembered anyway, "always" is "allow"."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..config.local_rules import add_local_allow_rule
from ..core.errors import ConfigError, QuestionClosedError
from ..permissions.asking import Answer, Choice, OpenQuestion, allowed, declined
from ..tasks.team_link import ForwardedAnswer

if TYPE_CHECKING:
    from ..permissions.session_rules import SessionRules
    from ..tasks.manager import TaskManager
    from ..tasks.record import TaskRecord

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    question: OpenQuestion
    answer: Answer
    note: str | None = None
    """What became of an "always" beyond this call: the rule and the file it went to, or why it did not."""


class QuestionAnswers:
    def __init__(self, tasks: TaskManager, session_rules: SessionRules) -> None:
        self._tasks = tasks
        self._session_rules = session_rules

    async def answer(self, record: TaskRecord, question_id: str, choice: Choice, *, by: str, via: str) -> Receipt:
        """Settle an open question of `record`'s tree.

        Raises:
            QuestionClosedError: it is not open (answered before, timed out, or never asked in this tree).
        """
        root = self._tasks.root(record)
        entry = root.resources.questions.get(question_id)
        if entry is None:
            raise QuestionClosedError(_closed(record))
        team = self._tasks.team
        if team is not None and self._tasks.live(root.id) is None:  # another replica runs it: the answer goes there
            await team.forward_answer(ForwardedAnswer(root.id, question_id, choice, by, via))
            answer = _answer(choice, by=by, via=via)
            self._tasks.answer(record, question_id, answer)
            return Receipt(question=entry, answer=answer)
        note = None
        if choice == "always" and entry.question.kind == "trust":
            choice = "allow"  # trusting a folder is remembered already: "always" adds nothing to it
        elif choice == "always":
            note = await self._always(entry)
        answer = _answer(choice, by=by, via=via)
        if self._tasks.answer(record, question_id, answer) is None:  # answered elsewhere while the file was written
            raise QuestionClosedError(_closed(record))
        logger.info("task %s: %s %s by %s via %s", entry.task_id, answer.kind, entry.question.tool, by, via)
        return Receipt(question=entry, answer=answer, note=note)

    async def _always(self, entry: OpenQuestion) -> str:
        question = entry.question
        if question.suggestion is None or question.project is None:
            return "No rule can spare this question (an ask rule or the managed policy decides it): allowed once."
        project, rule = Path(question.project), question.suggestion
        self._session_rules.add(project, rule)
        try:
            written = await anyio.to_thread.run_sync(add_local_allow_rule, project, rule)
        except ConfigError as exc:
            logger.warning("always allow: %s", exc.message)
            return f"{rule} is allowed for the rest of this server session; {exc.message}."
        return f"{rule} is allowed from now on (added to {written})."


def _answer(choice: Choice, *, by: str, via: str) -> Answer:
    return declined(by=by, via=via) if choice == "deny" else allowed(by=by, via=via, always=choice == "always")


def _closed(record: TaskRecord) -> str:
    return (
        f"That question of task {record.id} is not open any more: it was answered already, it waited longer than "
        f"--ask-timeout, or the task ended (it is {record.state})."
    )
