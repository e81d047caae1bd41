"""Compaction: when a conversation grows too long for the model, it is summarised and the run goes on from the summary.

The summary is asked of the same model, with the same system prompt and tools, as one more user turn (tools may not
be called in it), so the request shares the prompt cache of the conversation it summarises. The conversation is then
replaced by one user message: the first message's context and preloaded skills, then the summary and the instruction
to carry on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..core.messages import AssistantMessage, Message, ToolResult, ToolResultMessage, UserMessage

SUMMARY_REQUEST: Final = """\
Stop working on the task for a moment: the conversation has grown too long and will be replaced by a summary that \
you write now. Do not call any tools. Write the summary so that you can carry on the task from it alone, \
without the messages above. Include, under headings:

1. The task: what was asked, in full, with every requirement, constraint and preference stated so far.
2. Progress: what has been done, in order, and what each step found or changed.
3. Files and code: every file read, created or changed (absolute paths), with the details and snippets that \
still matter.
4. Errors and fixes: problems met and how they were solved, or that they remain open.
5. Open work: what is left to do, and the very next step.

Answer with the summary only."""

CONTINUATION: Final = """\
This task was started in an earlier part of the conversation that grew too long and was summarised. The summary \
below covers everything up to now; the original messages are gone. Continue the task from where it stopped, \
without asking for confirmation and without repeating finished work.

<summary>
{summary}
</summary>"""

_CUT_TO: Final = 2_000
"""When even the summary request is too long, long texts are cut to this many characters first."""


def summary_messages(messages: Sequence[Message], *, shrink: int = 0) -> tuple[Message, ...]:
    """The conversation plus the summary request. `shrink` > 0 makes it smaller for a model that refused it as too
    long: long texts are cut (1), then older turns are dropped (2 and up, each time more)."""
    kept = list(messages)
    if shrink >= 1:
        kept = [_cut(message) for message in kept]
    if shrink >= 2 and len(kept) > 2:
        drop = min(len(kept) - 2, max(1, (len(kept) - 1) * (shrink - 1) // 3))
        start = 1 + drop
        while start < len(kept) and not isinstance(kept[start], AssistantMessage):
            start += 1  # a kept turn must not begin with tool results whose calls were dropped
        kept = [kept[0], *kept[start:]]
    return (*kept, UserMessage(content=SUMMARY_REQUEST))


def continuation_message(summary: str, first: Message | None) -> UserMessage:
    """The message that replaces the conversation: the original context and skills around the summary."""
    context = first.context if isinstance(first, UserMessage) else ()
    attachments = first.attachments if isinstance(first, UserMessage) else ()
    return UserMessage(content=CONTINUATION.format(summary=summary.strip()), context=context, attachments=attachments)


def _cut(message: Message) -> Message:
    if isinstance(message, UserMessage):
        return UserMessage(
            content=_cut_text(message.content),
            context=tuple(_cut_text(block) for block in message.context),
            attachments=tuple(_cut_text(block) for block in message.attachments),
        )
    if isinstance(message, ToolResultMessage):
        return ToolResultMessage(
            results=tuple(
                ToolResult(call_id=r.call_id, content=_cut_text(r.content), is_error=r.is_error)
                for r in message.results
            )
        )
    return message


def _cut_text(text: str) -> str:
    if len(text) <= _CUT_TO:
        return text
    return f"{text[:_CUT_TO]}\n[... {len(text) - _CUT_TO} more characters left out to fit the summary request]"
