"""The changed-files note of a result: which files a task created, modified and deleted, with a short diff summary."""

from __future__ import annotations

from typing import Any

from ..agent.file_changes import FileChange, FileChanges
from .inert import inert

LISTED_FILES = 30
"""How many changed files a result the host gets lists; the rest are counted (`tasks show` lists every one kept)."""


def changed_files_notes(changes: FileChanges | None, *, limit: int | None = LISTED_FILES) -> list[str]:
    """The note for the task's result ([] when it changed nothing); `limit` None lists every file kept."""
    if changes is None or (not changes.count and not changes.partial):
        return []
    shown = changes.files if limit is None else changes.files[:limit]
    lines = [change_line(change) for change in shown]
    unlisted = changes.count - len(shown)
    if unlisted:
        lines.append(f"... and {unlisted} more")
    if changes.partial:
        lines.append(f"(the list may miss changes made by other tools than Write and Edit: {changes.partial})")
    where = f" under {inert(changes.root, one_line=True)}" if changes.root else ""
    return [f"[Files the task changed ({changes.count}){where}:\n" + "\n".join(lines) + "]"]


def change_line(change: FileChange) -> str:
    """One file: what happened to it, its path (made inert: a file name is the model's choice), its diff summary."""
    parts = [f"{change.kind} {inert(change.path, one_line=True)}"]
    summary = diff_summary(change)
    if summary:
        parts.append(f"({summary})")
    if change.outside:
        parts.append("[outside the allowed folders]")
    if change.task:
        parts.append(f"[by task {change.task}]")
    return " ".join(parts)


def diff_summary(change: FileChange) -> str:
    """`+12 -3`, `+40` for a new file, `binary`, or "" when the lines are not known."""
    if change.binary:
        return "binary"
    if change.added is None or change.removed is None:
        return ""
    if change.kind == "created":
        return f"+{change.added}"
    if change.kind == "deleted":
        return f"-{change.removed}"
    return f"+{change.added} -{change.removed}"


def files_row(changes: FileChanges | None, *, limit: int = LISTED_FILES) -> dict[str, Any] | None:
    """The changed files as the dashboard, the App view and `tasks list --json` show them (paths made inert);
    None when the task has no list (it never ran, or it is still running)."""
    if changes is None:
        return None
    return {
        "count": changes.count,
        "root": inert(changes.root, one_line=True),
        "partial": changes.partial,
        "files": [
            {
                "path": inert(change.path, one_line=True),
                "kind": change.kind,
                "summary": diff_summary(change),
                "outside": change.outside,
                "task": change.task,
                "line": change_line(change),
            }
            for change in changes.files[:limit]
        ],
    }
