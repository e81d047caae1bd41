"""The permission question as the person sees it, wherever they see it (the host's form, the App view, the
dashboard, the terminal). Its first line names the agent, the tool and the whole target (the command, the file, the
URL), shortened only in the middle when very long: hosts that show only the first lines of a form (Claude Code)
still show what the person decides on. Everything in it that a model or a project file chose is made inert: an
escape sequence or a bidi override in a command must not change what the person reads before allowing it."""

from __future__ import annotations

import json

from ..permissions.asking import PermissionQuestion
from ..permissions.trust_question import TrustItem, TrustItemKind, remembered_in, trust_items
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
TRUST_ITEM_LIMIT = 2000
"""The longest hook command (or rule, or server command line) a trust question shows whole."""
_TRUST_NOUNS: dict[TrustItemKind, tuple[str, str]] = {
    "hook": ("hook command", "hook commands"),
    "mcp_server": ("MCP server", "MCP servers"),
    "allow_rule": ("allow rule", "allow rules"),
    "directory": ("extra folder", "extra folders"),
    "mode": ("wider permission mode", "wider permission modes"),
}
_TRUST_SECTIONS: dict[TrustItemKind, str] = {
    "hook": "Hook commands it would run:",
    "mcp_server": "MCP servers its agents could start:",
    "allow_rule": "Allow rules that would count (calls they match run without asking):",
    "directory": "Folders the file tools could use besides the project (permissions.additionalDirectories):",
    "mode": "Permission modes that would count:",
}


def question_headline(question: PermissionQuestion) -> str:
    """One line: the agent, the tool and what it touches (for a trust question: the folder, and what it adds)."""
    if question.kind == "trust":
        return _trust_headline(question)
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


def allow_label(question: PermissionQuestion) -> tuple[str, str]:
    """The title and the description of a form's "allow" checkbox: what checking it does, and leaving it."""
    if question.kind == "trust":
        return (
            "Trust this folder",
            "Check to trust the folder: its hooks, MCP servers and permissions count from now on, and this server "
            "does not ask again. Leave unchecked not to trust it; that answer is remembered too.",
        )
    return "Allow this call", "Check to let the subagent make this one call; leave unchecked to deny it."


def button_labels(question: PermissionQuestion) -> dict[str, str]:
    """What the App view's and the dashboard's buttons say for each answer they offer."""
    if question.kind == "trust":
        return {"allow": "Trust this folder", "deny": "Do not trust it"}
    return {"allow": "Allow once", "always": "Always allow", "deny": "Deny"}


def permission_message(question: PermissionQuestion, *, task_id: str) -> str:
    if question.kind == "trust":
        return _trust_message(question, task_id=task_id)
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


def _trust_headline(question: PermissionQuestion) -> str:
    folder = middle_cut(inert(question.project or question.target() or "", one_line=True), HEADLINE_TARGET)
    counts: dict[TrustItemKind, int] = {}
    for item in trust_items(question):
        counts[item.kind] = counts.get(item.kind, 0) + 1
    parts = [f"{count} {_TRUST_NOUNS[kind][0 if count == 1 else 1]}" for kind, count in counts.items()]
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
    agent = inert(question.agent, one_line=True)
    return f"Trust the folder {folder}? Its files would give subagent '{agent}' {listed or 'its settings'}"


def _trust_message(question: PermissionQuestion, *, task_id: str) -> str:
    """The folder, everything its files would add (each whole and inert, on a line of its own, so no command can
    pass for a line of the form), then what each answer does."""
    lines = [question_headline(question), "", f"Task {task_id}.", "", _TRUST_INTRODUCTION]
    items = trust_items(question)
    for kind, title in _TRUST_SECTIONS.items():
        chosen = [item for item in items if item.kind == kind]
        if chosen:
            lines += ["", title, *(_trust_line(item) for item in chosen)]
    kept = remembered_in(question)
    where = f" in {inert(kept, one_line=True)}" if kept else ""
    lines += [
        "",
        "Agent files of the folder count as well once it is trusted, with their own hooks, MCP servers and modes.",
        "",
        f"Trust (allow): the folder is trusted from now on; this server remembers that{where} and does not ask again.",
        "Do not trust (deny): the task runs without all of this; remembered too, so you are not asked again.",
        "No answer within --ask-timeout: the task runs without it, and the next task asks again.",
    ]
    if kept:
        lines.append(f"To be asked again later, remove the folder's entry from {inert(kept, one_line=True)}.")
    return "\n".join(lines)


_TRUST_INTRODUCTION = (
    "The folder is not trusted yet, so what its own files add is left out. Trusting it lets this run and count, in "
    "this task and every later one:"
)


def _trust_line(item: TrustItem) -> str:
    text = middle_cut(inert(item.text, one_line=True), TRUST_ITEM_LIMIT)
    detail = f"{inert(item.detail, one_line=True)}, " if item.detail else ""
    return f"- {text}   ({detail}{inert(item.source, one_line=True)})"
