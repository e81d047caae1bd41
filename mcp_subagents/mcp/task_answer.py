"""`TaskAnswer`: the App view's Allow once, Always allow and Deny buttons. A tool only the app may call, and one that
takes an answer only with the question's token from the `_meta` of a `TaskList` result (`answer_tokens`), which
the model never sees: knowing the task and the question is not enough to answer for the person."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..render.inert import inert
from ..render.questions import question_headline
from ..render.status import answered_text, wrong_answer_token_text
from ..runtime.service import Subagents
from .answer_tokens import AnswerTokens
from .schemas import TaskAnswerInput, parse_arguments

VIA = "the App view"


async def task_answer_call(
    app: Subagents, tokens: AnswerTokens, arguments: dict[str, Any], principal: str
) -> types.CallToolResult:
    """Settle the question for `principal`, who must own the task and bring the question's token.

    Raises:
        InvalidArgumentsError: a field is missing or of the wrong kind.
        TaskNotFoundError: no such task of `principal` (another principal's task is answered alike).
        QuestionClosedError: the question was answered already, timed out, or its task ended.
    """
    request = parse_arguments("TaskAnswer", TaskAnswerInput, arguments)
    record = await app.tasks.fetch(request.task_id, principal=principal)
    if not tokens.matches(principal, request.question_id, request.token):
        return _text(wrong_answer_token_text(request.question_id), is_error=True)
    receipt = await app.answers.answer(record, request.question_id, request.choice, by=principal, via=VIA)
    headline = question_headline(receipt.question.question)
    return _text(inert(answered_text(headline, receipt.answer, receipt.note)))  # the rule quotes the model


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)
