"""The permission question as the person sees it in the host's form."""

from __future__ import annotations

import json

from ..permissions.asking import PermissionQuestion

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
    lines = [f"Subagent '{question.agent}' wants to run {question.tool} (task {task_id}).", ""]
    others: list[str] = []
    for name, value in question.arguments.items():
        label = _SHOWN_WHOLE.get(name)
        if label is not None and isinstance(value, str):
            lines += [f"{label}:", value, ""]
        else:
            others.append(f"{name}: {_cut(value)}")
    if others:
        lines += [*others, ""]
    lines.append(f"Why it asks: {question.reason}")
    return "\n".join(lines)


def _cut(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= _OTHER_LIMIT:
        return text
    return f"{text[:_OTHER_LIMIT]}… ({len(text)} characters in all)"
