"""The cost tree: a task's figures include its nested tasks', and each view lists them with agent, model, state,
stop reason, turns, tokens and cost: `tasks show` and the dashboard from the files (while the tree runs and after),
`TaskList` (the App view) from the live tasks."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from mcp_subagents.cli.tasks import tasks_command
from mcp_subagents.core.principals import LOCAL_PRINCIPAL
from mcp_subagents.mcp.task_list import task_list_call
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.serve.dashboard_data import task_page_row
from mcp_subagents.tasks.files import find_task, read_task
from mcp_subagents.tasks.tree import TreeReader
from tests.support import make_settings, running_app, write_agent

pytestmark = pytest.mark.anyio


class Lead:
    """The lead launches a helper, which answers at once, then a slow helper, which waits for `release`."""

    def __init__(self) -> None:
        self.waiting, self.release = anyio.Event(), anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        prompt, done = str(request.messages[0]), len(request.messages) // 2
        if "quick" in prompt:
            return text("quick done")
        if "slow" in prompt:
            self.waiting.set()
            await self.release.wait()
            return text("slow done")
        if done < 2:
            which = ("quick", "slow")[done]
            return tool_call("Agent", {"description": f"{which} help", "prompt": which, "subagent_type": "helper"})
        return text("all done")


def show(state_dir: Path, task_id: str) -> str:
    out = io.StringIO()
    assert tasks_command("show", state_dir, task_id=task_id, as_json=False, out=out) in (0, 1)
    return out.getvalue()


async def test_the_tree_of_a_running_task_and_of_a_finished_one(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "helper", description="helps")
    model = Lead()
    async with running_app(settings, model=FunctionModel(model)) as app:
        lead = app.launch(TaskRequest(description="lead the work", prompt="lead", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await model.waiting.wait()
        live = await anyio.to_thread.run_sync(TreeReader(settings.state_dir).subtasks, lead.id)
        shown_live = await anyio.to_thread.run_sync(show, settings.state_dir, lead.id)
        listing = (await task_list_call(app, LOCAL_PRINCIPAL, None)).structured_content
        model.release.set()
        with anyio.fail_after(10):
            await lead.done.wait()
    assert [(level, child.header.description, child.state) for level, child in live] == [
        (1, "quick help", "completed"),
        (1, "slow help", "running"),
    ]
    assert (
        "nested tasks: 2 (their cost is in the figures above as they spend; their tokens once each ends)" in shown_live
    )
    assert listing is not None
    lead_entry = next(entry for entry in listing["tasks"] if entry["task_id"] == lead.id)
    assert [(node["description"], node["state"], node["model"]) for node in lead_entry["tree"]] == [
        ("quick help", "completed", "claude-sonnet-4-6"),
        ("slow help", "running", "claude-sonnet-4-6"),
    ]

    outcome = lead.outcome
    assert outcome is not None and outcome.counts is not None
    assert (outcome.counts.nested.tasks, outcome.counts.nested.turns) == (2, 2)
    shown = show(settings.state_dir, lead.id)
    assert "nested tasks: 2; with them: 5 turns" in shown  # three of its own, one each below
    assert "quick help [completed] claude-sonnet-4-6 · 1 turn(s) · " in shown
    assert "nested_tasks: 2; nested_turns: 2; nested_tool_uses: 0; " in shown  # the result's usage line
    snapshot = read_task(find_task(settings.state_dir, lead.id))
    assert snapshot is not None
    row = task_page_row(snapshot, TreeReader(settings.state_dir), stall_after=60)
    assert row["nested"] == {"tasks": 2, "turns": 2, "tool_uses": 0}
    [quick, slow] = row["tree"]
    assert (quick["level"], quick["stop"], slow["stop"]) == (1, "end_turn", "end_turn")
    assert quick["cost_usd"] > 0 and row["cost_usd"] > quick["cost_usd"] + slow["cost_usd"]  # the lead's own on top
