"""A budget that the tasks an agent launches could overrun.

Before the fix a budget stopped only the task it was set on, and only with what that task spent itself: a nested
task had a budget of its own and spent nothing of its parent's until it ended. With `--max-budget-usd 0.05` on a
model without a price, a nested task ran to its turn limit (nothing could stop it: no price, no cost); eight nested
tasks launched in one turn each spent a whole budget of their own, and their parent learnt of it only afterwards.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.fake_llm import Block, FakeLLM, Turn, text, tool_use, turn
from tests.stdio_raw import RawStdioServer

from .server import TASK, make_scene

pytestmark = pytest.mark.anyio

CHILD_PROMPT = "child: list the files, again and again"


def nested_task(index: int = 0) -> Any:
    return tool_use(
        "Agent", {"description": f"child {index}", "prompt": CHILD_PROMPT, "subagent_type": "general-purpose"}
    )


def is_child(body: dict[str, Any]) -> bool:
    return CHILD_PROMPT in json.dumps(body["messages"][0])


def tree_model(children: int, *, input_tokens: int, output_tokens: int) -> Any:
    """The root launches `children` nested tasks in its first turn and says "done" once they answered; every nested
    task calls Glob for ever. Every reply costs the same tokens."""

    def step(body: dict[str, Any]) -> Turn:
        blocks: list[Block]
        if is_child(body):
            blocks = [tool_use("Glob", {"pattern": "*"})]
        elif len(body["messages"]) > 1:
            blocks = [text("done")]
        else:
            blocks = [nested_task(index) for index in range(children)]
        return turn(*blocks, input_tokens=input_tokens, output_tokens=output_tokens)

    return step


async def run_root(scene: Any, **arguments: Any) -> str:
    server = await RawStdioServer.start(scene.environ)
    try:
        with anyio.fail_after(120):
            return await server.call_tool("Task", {**TASK, **arguments})
    finally:
        await server.close()


def root_output(scene: Any, result: str) -> str:
    task_id = re.findall(r"task_id: (\w+)", result)[-1]
    return (scene.state / "tasks" / f"{task_id}.output").read_text(encoding="utf-8")


async def test_a_nested_task_on_a_model_without_a_price_stops_at_the_servers_budget(
    host_tmp: Path, fake: FakeLLM
) -> None:
    # At the dearest known price ($15 / $75 per million tokens) each reply costs $0.0225: the third one passes $0.05.
    scene = make_scene(
        host_tmp, fake, sandbox="off", MCP_SUBAGENTS_MODEL="claude-fable-5-2", MCP_SUBAGENTS_MAX_BUDGET_USD="0.05"
    )
    fake.default = tree_model(1, input_tokens=1000, output_tokens=100)
    result = await run_root(scene)
    assert len(fake.requests) == 3, f"{len(fake.requests)} model requests under a $0.05 budget"
    assert "allowed by --max-budget-usd" in result
    assert "priced as the dearest known model, $15/$75 per million tokens, because claude-fable-5-2 has no price" in (
        root_output(scene, result)
    )


async def test_eight_nested_tasks_launched_in_one_turn_share_their_parents_budget(
    host_tmp: Path, fake: FakeLLM
) -> None:
    # Sonnet 4.6: $0.018 a reply (1000 tokens in, 1000 out): three replies spend the budget, and each of the eight
    # nested tasks may pass it by the one reply it was waiting for.
    scene = make_scene(
        host_tmp, fake, sandbox="off", MCP_SUBAGENTS_MODEL="claude-sonnet-4-6", MCP_SUBAGENTS_MAX_BUDGET_USD="0.05"
    )
    fake.default = tree_model(8, input_tokens=1000, output_tokens=1000)
    result = await run_root(scene)
    assert len(fake.requests) <= 3 + 8, f"{len(fake.requests)} model requests under a $0.05 budget"
    spent = float(re.findall(r"cost_usd: ([\d.]+);", result)[-1])
    assert spent <= 0.05 + 8 * 0.018
    assert "Task stopped at its budget" in result and "allowed by --max-budget-usd" in result


async def test_an_agents_max_budget_covers_the_tasks_it_launches(host_tmp: Path, fake: FakeLLM) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off", MCP_SUBAGENTS_MODEL="claude-sonnet-4-6")
    agents = scene.home / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "lead.md").write_text(
        "---\nname: lead\ndescription: delegates\nmaxBudgetUsd: 0.05\n---\nDelegate.\n", encoding="utf-8"
    )
    fake.default = tree_model(1, input_tokens=1000, output_tokens=1000)
    result = await run_root(scene, subagent_type="lead")
    assert len(fake.requests) == 3, f"{len(fake.requests)} model requests under a $0.05 budget"
    assert "allowed by maxBudgetUsd of agent lead" in result
