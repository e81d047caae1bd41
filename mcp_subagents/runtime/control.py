"""What the control channel asks of this server process: the user who owns the state directory stops a task or
answers its permission question, from the command line or the dashboard, whatever principal started the task (that
user can read every transcript in the directory anyway)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

from ..core.errors import QuestionClosedError
from ..permissions.asking import Choice
from ..tasks.control import PLACES, AnswerRequest
from ..tasks.team_link import ForwardedAnswer

if TYPE_CHECKING:
    from .service import Subagents

logger = logging.getLogger(__name__)


class ControlRequests:
    def __init__(self, app: Subagents) -> None:
        self._app = app

    def stop(self, task_id: str) -> bool:
        return self._app.stop_own(task_id)

    async def answer_as_sent(self, answer: ForwardedAnswer) -> None:
        """An answer another replica of the team took (or `tasks answer --database-url` sent)."""
        record = self._app.tasks.live(answer.task_id)
        if record is None:
            return
        try:
            await self._app.answers.answer(record, answer.question_id, answer.choice, by=answer.by, via=answer.via)
        except QuestionClosedError as exc:
            logger.info("an answer from another replica: %s", exc.message)

    async def answer(self, request: AnswerRequest) -> None:
        record = self._app.tasks.live(request.task_id)
        if record is None:
            logger.info("control channel: an answer for task %s, which this process does not run", request.task_id)
            return
        choice = cast("Choice", request.choice)
        via = PLACES[request.place]
        try:
            await self._app.answers.answer(record, request.question_id, choice, by=request.by, via=via)
        except QuestionClosedError as exc:
            logger.info("control channel: %s", exc.message)
