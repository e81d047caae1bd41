"""The trust question: before a task runs in a project folder nobody trusted, whose own files would add hooks, MCP
servers or permissions, the person is asked whether to trust the folder. It travels as a `PermissionQuestion` of
kind "trust" on the same board as the questions about tool calls, so it reaches the person wherever those do; its
`arguments` carry what the folder would add, which every place that shows it (another process included, from the
transcript) reads back with `trust_items`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast, get_args

from .asking import PermissionQuestion

TrustItemKind: TypeAlias = Literal["hook", "mcp_server", "allow_rule", "directory", "mode"]
TRUST_ITEM_KINDS: tuple[TrustItemKind, ...] = get_args(TrustItemKind)
TRUST_TOOL = "(project trust)"
"""What a trust question has for a tool name: no tool is called that, so no tool call's question can pass for it."""


@dataclass(frozen=True, slots=True)
class TrustItem:
    """One thing the folder's own files would add once it is trusted."""

    kind: TrustItemKind
    text: str
    """The hook's command, the server's command line or URL, the rule, the folder, the mode: as written."""
    source: str
    """The file that says so."""
    detail: str = ""
    """The hook's event, the server's name."""


def trust_question(
    *, agent: str, folder: str, items: Iterable[TrustItem], remembered_in: str | None, reason: str
) -> PermissionQuestion:
    """The question whether to trust `folder`, listing `items`; `remembered_in` is where the answer is kept."""
    listed = [{"kind": item.kind, "text": item.text, "source": item.source, "detail": item.detail} for item in items]
    arguments: dict[str, Any] = {"path": folder, "would_add": listed}
    if remembered_in is not None:
        arguments["remembered_in"] = remembered_in
    return PermissionQuestion(
        agent=agent, tool=TRUST_TOOL, arguments=arguments, reason=reason, project=folder, kind="trust"
    )


def trust_items(question: PermissionQuestion) -> list[TrustItem]:
    """What a trust question lists (entries that are not well formed are left out)."""
    raw = question.arguments.get("would_add")
    found: list[TrustItem] = []
    for entry in cast("list[Any]", raw) if isinstance(raw, list) else ():
        item = cast("dict[str, Any]", entry) if isinstance(entry, dict) else {}
        kind, text, source, detail = (item.get(key) for key in ("kind", "text", "source", "detail"))
        if kind in TRUST_ITEM_KINDS and isinstance(text, str) and isinstance(source, str):
            found.append(TrustItem(kind, text, source, detail if isinstance(detail, str) else ""))
    return found


def remembered_in(question: PermissionQuestion) -> str | None:
    """The file a trust question's answer is kept in, when there is one."""
    value = question.arguments.get("remembered_in")
    return value if isinstance(value, str) else None
