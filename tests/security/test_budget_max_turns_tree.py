"""A host's `max_turns` that the tasks an agent launches could overrun.

Before the fix `max_turns` on a Task capped that task's own model requests only: a nested task had the turn limit
of its own (`--max-turns`, 50 by default), so a host's `max_turns: 2` became 52 requests with one nested task that
kept working, and 402 with eight launched in one turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeLLM

from .server import make_scene
from .test_budget_nested_tree import run_root, tree_model

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("children", [1, 8])
async def test_a_hosts_max_turns_caps_every_request_of_the_tasks_tree(
    host_tmp: Path, fake: FakeLLM, children: int
) -> None:
    scene = make_scene(host_tmp, fake, sandbox="off")
    fake.default = tree_model(children, input_tokens=10, output_tokens=5)
    result = await run_root(scene, max_turns=2)
    assert len(fake.requests) == 2, f"{len(fake.requests)} model requests under max_turns 2"
    assert "<task_result" in result  # the host's task stops at its limit as before: with its result so far
    assert "max_turns 2" in result
