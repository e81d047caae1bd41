from __future__ import annotations

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import ToolContext

from .conftest import CallTool

pytestmark = pytest.mark.anyio


async def test_todowrite_stores_the_list_and_renders_it(call: CallTool, ctx: ToolContext) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending"},
    ]
    result = await call("TodoWrite", {"todos": todos})
    assert result.startswith("Todos have been modified successfully.")
    assert result.endswith("[x] Read the code\n[~] Fix the bug (Fixing the bug)\n[ ] Run the tests")
    assert ctx.todos.items == todos


async def test_todowrite_replaces_the_previous_list(call: CallTool, ctx: ToolContext) -> None:
    await call("TodoWrite", {"todos": [{"content": "a", "status": "pending"}]})
    await call("TodoWrite", {"todos": [{"content": "b", "status": "completed"}]})
    assert ctx.todos.items == [{"content": "b", "status": "completed"}]


async def test_todowrite_with_an_empty_list_clears_it(call: CallTool, ctx: ToolContext) -> None:
    await call("TodoWrite", {"todos": [{"content": "a", "status": "pending"}]})
    assert await call("TodoWrite", {"todos": []}) == "The todo list is now empty."
    assert ctx.todos.items == []


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "a", "status": "done"}, "status"),
        ({"content": "", "status": "pending"}, "content"),
        ({"status": "pending"}, "content"),
        ({"content": "a", "status": "pending", "priority": "high"}, "priority"),
    ],
)
async def test_todowrite_rejects_malformed_items(
    call: CallTool, ctx: ToolContext, item: dict[str, str], field: str
) -> None:
    with pytest.raises(ToolError, match=field):
        await call("TodoWrite", {"todos": [item]})
    assert ctx.todos.items == []
