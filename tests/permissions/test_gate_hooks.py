"""The permission gate with a PreToolUse hook's decision: `ask` asks even where a rule allows, `allow` skips only
the question the mode would ask; plan and dontAsk modes keep their word."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.core.hook_points import HookPermission
from mcp_subagents.core.messages import ToolCall
from mcp_subagents.permissions.asking import ALLOWED, DECLINED, Answer, Denial, PermissionQuestion
from mcp_subagents.permissions.gate import PermissionGuard
from mcp_subagents.permissions.policy import PermissionPolicy
from mcp_subagents.permissions.rules import PermissionRules
from mcp_subagents.runtime.gates import RunGate
from mcp_subagents.tools import builtin_tools

pytestmark = pytest.mark.anyio

TOOLS = builtin_tools()


class Person:
    """The host's person, answering every question the same way and remembering what was asked."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.asked: list[PermissionQuestion] = []

    async def __call__(self, question: PermissionQuestion) -> Answer:
        self.asked.append(question)
        return self.answer


async def check(
    policy: PermissionPolicy, tool: str, arguments: dict[str, object], hint: HookPermission, person: Person
) -> str:
    gate = RunGate([PermissionGuard({"unconfined": policy}, agent="a", ask=person)], denials=list[Denial]())
    try:
        await gate(ToolCall(id="1", name=tool, arguments=arguments), TOOLS[tool], hint)
    except ToolError as exc:
        return exc.message
    return "allowed"


async def test_a_hooks_ask_asks_even_where_an_allow_rule_allows(tmp_path: Path) -> None:
    policy = PermissionPolicy(cwd=tmp_path, rules=PermissionRules.of(allow=["Bash(echo *)"]))
    person = Person(DECLINED)
    outcome = await check(policy, "Bash", {"command": "echo hi"}, "ask", person)
    assert outcome.startswith("Permission denied: The person denied this call.")
    assert person.asked[0].reason == "A PreToolUse hook asked for the person's approval of this call."
    assert await check(policy, "Bash", {"command": "echo hi"}, None, Person(DECLINED)) == "allowed"


async def test_a_hooks_allow_skips_the_modes_question_only(tmp_path: Path) -> None:
    person = Person(DECLINED)
    write: dict[str, object] = {"file_path": "a.txt", "content": "x"}
    default = PermissionPolicy(cwd=tmp_path)
    assert await check(default, "Write", write, "allow", person) == "allowed" and person.asked == []
    plan = PermissionPolicy(cwd=tmp_path, mode="plan")
    assert "plan mode is read-only" in await check(plan, "Write", write, "allow", person)
    dont_ask = PermissionPolicy(cwd=tmp_path, mode="dontAsk")
    assert await check(dont_ask, "Write", write, "allow", person) == "allowed"
    with_ask_rule = PermissionPolicy(cwd=tmp_path, mode="dontAsk", rules=PermissionRules.of(ask=["Write"]))
    assert "dontAsk mode never asks" in await check(with_ask_rule, "Write", write, "allow", person)


async def test_a_hooks_ask_in_dont_ask_mode_denies(tmp_path: Path) -> None:
    policy = PermissionPolicy(cwd=tmp_path, mode="dontAsk", rules=PermissionRules.of(allow=["Bash(echo *)"]))
    person = Person(ALLOWED)
    assert "this server does not ask" in await check(policy, "Bash", {"command": "echo hi"}, "ask", person)
    assert person.asked == []
