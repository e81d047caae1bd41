"""The permission question as the person sees it in the host's form. Everything in it that a model or a project
file chose (the agent's name, the tool's, the arguments, the reason that quotes them) is made inert: an escape
sequence or a bidi override in a command must not change what the person reads before allowing it."""

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


def permission_message(question: PermissionQuestion, *, task_id: str) -> str:
    agent, tool = inert(question.agent, one_line=True), inert(question.tool, one_line=True)
    lines = [f"Subagent '{agent}' wants to run {tool} (task {task_id}).", ""]
    others: list[str] = []
    for name, value in question.arguments.items():
        label = _SHOWN_WHOLE.get(name)
        if label is not None and isinstance(value, str):
            lines += [f"{label}:", inert(value), ""]
        else:
            others.append(f"{inert(name, one_line=True)}: {inert(_cut(value))}")
    if others:
        lines += [*others, ""]
    lines.append(f"Why it asks: {inert(question.reason)}")
    return "\n".join(lines)


def _cut(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= _OTHER_LIMIT:
        return text
    return f"{text[:_OTHER_LIMIT]}… ({len(text)} characters in all)"
