"""The permission question as the person sees it, wherever they see it (the host's form, the App view, the
dashboard, the terminal). Its first line names the agent, the tool and the whole target (the command, the file, the
URL), shortened only in the middle when very long: hosts that show only the first lines of a form (Claude Code)
still show what the person decides on. Everything in it that a model or a project file chose is made inert: an
escape sequence or a bidi override in a command must not change what the person reads before allowing it."""

from __future__ import annotations

import json

from ..permissions.asking import PermissionQuestion
from .inert import inert

_SHOWN_WHOLE = {
    "command": "Command",
    "file_path": "File",
    "notebook_path": "Notebook",
    "url": "URL",
    "pattern": "Pattern",
    "path": "Path",
}
"""Arguments that say what the call touches: shown whole, however long, since the person decides on them."""
_OTHER_LIMIT = 400
HEADLINE_TARGET = 240
"""The longest target a first line shows whole; a longer one keeps its start and its end."""


def question_headline(question: PermissionQuestion) -> str:
    """One line: the agent, the tool and what it touches."""
    agent, tool = inert(question.agent, one_line=True), inert(question.tool, one_line=True)
    target = question.target()
    if target is None:
        return f"Subagent '{agent}' asks to run {tool}"
    return f"Subagent '{agent}' asks to run {tool}: {middle_cut(inert(target, one_line=True), HEADLINE_TARGET)}"


def waiting_text(question: PermissionQuestion) -> str:
    """How a task waiting on `question` is shown in lists and progress."""
    return f"waiting for you: {question_headline(question)}"


def always_text(question: PermissionQuestion) -> str | None:
    """What "Always allow" does for this question; None when it cannot be offered."""
    if question.suggestion is None or question.project is None:
        return None
    where = f"{question.project.rstrip('/')}/.claude/settings.local.json"
    return f"Always allow adds {inert(question.suggestion, one_line=True)} to {inert(where, one_line=True)}."


def permission_message(question: PermissionQuestion, *, task_id: str) -> str:
    lines = [question_headline(question), "", f"Task {task_id}."]
    others: list[str] = []
    for name, value in question.arguments.items():
        label = _SHOWN_WHOLE.get(name)
        if label is not None and isinstance(value, str):
            lines += ["", f"{label}:", inert(value)]
        else:
            others.append(f"{inert(name, one_line=True)}: {inert(_cut(value))}")
    if others:
        lines += ["", *others]
    lines += ["", f"Why it asks: {inert(question.reason)}"]
    always = always_text(question)
    if always is not None:
        lines.append(always)
    return "\n".join(lines)


def middle_cut(text: str, limit: int) -> str:
    """`text`, or its start and end around an ellipsis that says how much is left out."""
    if len(text) <= limit:
        return text
    keep = max(limit - 24, 8)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
    return f"{head} …({len(text) - len(head) - len(tail)} characters)… {tail}"


def _cut(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= _OTHER_LIMIT:
        return text
    return f"{text[:_OTHER_LIMIT]}… ({len(text)} characters in all)"
