"""A hostile model's text in the new places people read: a tool name it calls over and over (the looping notice in
the host's progress, the output file and `tasks list`), and a nested task's description in the cost tree (`tasks
show`, `TaskOutput`). Each reaches the person inert."""

from __future__ import annotations

from mcp_subagents.render.envelopes import stall_text
from mcp_subagents.render.status import describe_event
from mcp_subagents.render.tree import TreeEntry, tree_lines
from mcp_subagents.tasks.outcome import Stall
from mcp_subagents.tasks.record import Stalled
from tests.security.inert_support import HOSTILE, HOSTILE_TOOL, assert_inert

TOOL_ESCAPES = ("\\x1b]52;c;", "\\x07", "\\u202e")


def test_a_hostile_tool_name_in_a_loop_notice_is_inert() -> None:
    stall = Stall(kind="repeating", seconds=12.0, tool=HOSTILE_TOOL, repeats=3)
    assert_inert(stall_text(stall), escapes=TOOL_ESCAPES)
    assert_inert(describe_event(Stalled(stall)) or "", escapes=TOOL_ESCAPES)
    silent = Stall(kind="silent", seconds=200.0, tool=HOSTILE_TOOL)
    assert_inert(stall_text(silent), escapes=TOOL_ESCAPES)


def test_a_hostile_nested_task_in_the_tree_is_inert() -> None:
    entry = TreeEntry(
        level=2,
        task_id="0123456789abcdef",
        agent=HOSTILE_TOOL,
        description=HOSTILE,
        model="claude-sonnet-4-6",
        state="running",
        stop="",
        turns=1,
        tokens=10,
        cost_usd=None,
    )
    [line] = tree_lines([entry])
    assert_inert(line)
    assert "\n" not in line and line.startswith("  - 0123456789abcdef ")
