"""Nested subagents: Task for subagents whose tools allow it, `Task(agent)` limits, the depth limit and one past it,
the tree in TaskOutput, stop with the parent, usage counted in the parent, questions through the host call, nested
tasks of one turn running together within `--max-concurrent`, and turn limits over the tree and per task."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.core.messages import ToolCall, ToolResultMessage, UserMessage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel, text, tool_call
from tests.support import MODES, connected, last_results, make_settings, matched, text_of, write_agent

pytestmark = pytest.mark.anyio


def task(agent: str, **more: Any) -> dict[str, Any]:
    return {"description": "delegate", "prompt": "Go down one level.", "subagent_type": agent, **more}


def nested(agent: str, prompt: str = "Go down one level.") -> dict[str, Any]:
    return {"description": f"run {agent}", "prompt": prompt, "subagent_type": agent}


def relay(request: ModelRequest) -> ModelResponse:
    """Launch another relay; once the nested result is back, report it. Past the limit it tries all the same."""
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return text(f"below me: {last.results[0].content}")
    return tool_call("Agent", nested("relay"))


@pytest.mark.parametrize("mode", MODES)
async def test_nesting_goes_to_the_depth_limit_and_no_further(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)  # --max-depth 3, as in Claude Code
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "relay", description="passes work down")
    model = FunctionModel(relay)
    requests: list[ModelRequest] = []
    model.function = lambda request: (requests.append(request), relay(request))[1]
    async with connected(settings, mode=mode, model=model) as client:
        body = text_of(await client.call_tool("Task", task("relay")))
        top = re.findall(r"task_id: (\w+)", body)[-1]  # the outer usage line comes last
        status = text_of(await client.call_tool("TaskOutput", {"task_id": top}))
    with_task = [any(tool.name == "Agent" for tool in request.tools) for request in requests]
    assert with_task == [True, True, False, False, True, True]  # depth 1, 2, 3 (no Task), 3, then 2 and 1 report
    assert "no tool named 'Agent' is available to this agent" in body  # depth 3 tried one level more
    assert body.count("below me:") == 3  # each level reported what came back from the one below
    assert "input_tokens: 60" in body.rsplit("<usage>", 1)[1]  # six requests of 10 input tokens, all counted at the top
    tree = status.split("<subtasks>")[1].split("</subtasks>")[0].strip().splitlines()
    assert len(tree) == 2 and tree[0].startswith("- ") and tree[1].startswith("  - ")
    assert "relay: run relay [completed] sonnet · 4 turn(s) · " in tree[0]  # its own two, and two below it
    assert re.search(r"relay: run relay \[completed\] sonnet · 2 turn\(s\) · \d+ tokens$", tree[1])  # no price: no cost
    top_usage = body.rsplit("<usage>", 1)[1]
    assert "turns: 2; tool_uses: 1; nested_tasks: 2; nested_turns: 4; nested_tool_uses: 2; " in top_usage


async def test_task_with_agent_names_limits_what_may_be_launched(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "lead", extra="tools: Read, Task(reviewer)\n")
    write_agent(settings.user_agents_dir, "reviewer", description="reviews")
    write_agent(settings.user_agents_dir, "writer", description="writes")
    model = ScriptedModel(
        [
            tool_call("Agent", nested("writer")),
            lambda request: text(f"refused: {last_results(request)[0].content}"),
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("lead")))
    [task_tool] = [tool for tool in model.requests[0].tools if tool.name == "Agent"]
    assert task_tool.input_schema["properties"]["subagent_type"]["enum"] == ["reviewer"]
    assert "- reviewer: reviews" in task_tool.description and "writer" not in task_tool.description
    assert "This agent may not launch 'writer'. It may launch: reviewer" in body


async def test_the_nested_agent_tool_needs_no_subagent_type_and_then_runs_general_purpose(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "lead", extra="tools: Read, Task\n")  # Task: the old name, still accepted
    launch = {"description": "pass it on", "prompt": "Say which agent you are."}
    model = ScriptedModel(
        [
            tool_call("Agent", launch),
            text("general-purpose here"),
            lambda request: text(f"below: {last_results(request)[0].content}"),
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("lead")))
    [agent_tool] = [tool for tool in model.requests[0].tools if tool.name == "Agent"]
    schema = agent_tool.input_schema
    assert schema["required"] == ["description", "prompt"] and "default" not in schema["properties"]["subagent_type"]
    assert 'below: &lt;task_result agent="general-purpose">general-purpose here' in body  # escaped in the envelope


async def test_max_depth_one_means_no_nesting(tmp_path: Path) -> None:
    model = ScriptedModel([text("alone")])
    async with connected(make_settings(tmp_path, max_depth=1), model=model) as client:
        await client.call_tool("Task", task("general-purpose"))
    assert "Agent" not in [tool.name for tool in model.requests[0].tools]


class Tree:
    """A root that launches `children` nested tasks in one turn; each nested task answers at once, or (with
    `gather`) only once that many of them are waiting for the model together. Counts the requests in flight."""

    def __init__(self, children: int, *, gather: int = 0) -> None:
        self.children, self.gather = children, gather
        self.in_flight = self.peak = self.requests = 0
        self.gathered = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        first = request.messages[0]
        if isinstance(first, UserMessage) and str(first.content).startswith("child"):
            if self.in_flight == self.gather:
                self.gathered.set()
            if self.gather:
                with anyio.fail_after(10):
                    await self.gathered.wait()
            await anyio.lowlevel.checkpoint()  # others could start a request meanwhile, if they were let
            return text("child done")
        if isinstance(request.messages[-1], ToolResultMessage):
            return text(f"all {len(last_results(request))} answered")
        calls = tuple(
            ToolCall(id=f"c{index}", name="Agent", arguments=nested("general-purpose", f"child {index}"))
            for index in range(self.children)
        )
        return ModelResponse(parts=calls, stop_reason="tool_use")


@pytest.mark.parametrize(("cap", "gather"), [(1, 0), (3, 3)])
async def test_tasks_launched_in_one_turn_run_together_within_max_concurrent(
    tmp_path: Path, cap: int, gather: int
) -> None:
    tree = Tree(8, gather=gather)
    async with connected(make_settings(tmp_path, max_concurrent=cap), model=FunctionModel(tree)) as client:
        with anyio.fail_after(20):
            body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert "all 8 answered" in body
    assert tree.requests == 1 + 8 + 1
    assert tree.peak == cap  # the root lends its place to one child, the others wait for a free one


async def test_a_nested_task_waiting_for_a_place_shows_as_queued(tmp_path: Path) -> None:
    first_asks, release = anyio.Event(), anyio.Event()
    started: list[str] = []

    async def respond(request: ModelRequest) -> ModelResponse:
        first, last = request.messages[0], request.messages[-1]
        if isinstance(first, UserMessage) and str(first.content).startswith("child"):
            started.append(str(first.content))
            first_asks.set()
            with anyio.fail_after(10):
                await release.wait()
            return text("child done")
        if isinstance(last, ToolResultMessage):
            return text("both answered")
        calls = tuple(
            ToolCall(id=f"c{index}", name="Agent", arguments=nested("general-purpose", f"child {index}"))
            for index in range(2)
        )
        return ModelResponse(parts=calls, stop_reason="tool_use")

    async with connected(make_settings(tmp_path, max_concurrent=1), model=FunctionModel(respond)) as client:
        launched = text_of(await client.call_tool("Task", task("general-purpose", run_in_background=True)))
        parent = matched(r"task_id: (\w+)", launched)
        with anyio.fail_after(10):
            await first_asks.wait()
        status = text_of(await client.call_tool("TaskOutput", {"task_id": parent, "block": False}))
        release.set()
        with anyio.fail_after(10):
            done = text_of(await client.call_tool("TaskOutput", {"task_id": parent}))
    assert sorted(started) == ["child 0", "child 1"]  # both ran, one after the other (which first is not fixed)
    tree = status.split("<subtasks>")[1].split("</subtasks>")[0].strip().splitlines()
    assert len(tree) == 2
    assert sum("[running] sonnet · 1 turn(s)" in line for line in tree) == 1
    assert sum("[queued] sonnet · 0 turn(s)" in line for line in tree) == 1  # the other waits for the place
    assert "both answered" in done


async def test_a_nested_task_needs_no_free_slot_in_the_queue(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call("Agent", nested("general-purpose", "Say hi.")), text("hi from below"), text("done above")]
    )
    async with connected(make_settings(tmp_path, max_concurrent=1), model=model) as client:
        with anyio.fail_after(10):
            body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert "done above" in body


async def test_stopping_the_parent_stops_the_nested_task(tmp_path: Path) -> None:
    arrived, never = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> ModelResponse:
        first = request.messages[0]
        if isinstance(first, UserMessage) and first.content == "Wait below.":
            arrived.set()
            await never.wait()
        return tool_call("Agent", nested("general-purpose", "Wait below."))

    async with connected(make_settings(tmp_path), model=FunctionModel(respond)) as client:
        launched = text_of(await client.call_tool("Task", task("general-purpose", run_in_background=True)))
        parent = matched(r"task_id: (\w+)", launched)
        with anyio.fail_after(10):
            await arrived.wait()
        running = text_of(await client.call_tool("TaskOutput", {"task_id": parent, "block": False}))
        child = matched(r"<subtasks>\n- (\w+) ", running)
        with anyio.fail_after(10):
            await client.call_tool("TaskStop", {"task_id": parent})
        child_status = text_of(await client.call_tool("TaskOutput", {"task_id": child, "block": False}))
    assert "<status>stopped</status>" in child_status and f"<parent_task_id>{parent}</parent_task_id>" in child_status


@pytest.mark.parametrize("mode", MODES)
async def test_a_nested_task_asks_the_person_through_the_hosts_call(tmp_path: Path, mode: str) -> None:
    from tests.mcp.test_asking import Host

    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    host = Host("allow")

    def respond(request: ModelRequest) -> ModelResponse:
        first, last = request.messages[0], request.messages[-1]
        below = isinstance(first, UserMessage) and first.content == "Write it."
        if isinstance(last, ToolResultMessage):
            return text(("wrote: " if below else "child said: ") + last.results[0].content)
        if below:
            return tool_call("Write", {"file_path": "from-below.txt", "content": "nested"})
        return tool_call("Agent", nested("general-purpose", "Write it."))

    async with connected(settings, mode=mode, model=FunctionModel(respond), elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert (settings.cwd / "from-below.txt").read_text(encoding="utf-8") == "nested"
    [question] = host.questions
    assert question.startswith("Subagent 'general-purpose (launched by general-purpose)' asks to run Write")
    assert "Permission denied" not in body


def test_runs_that_list_the_same_agents_share_one_task_schema() -> None:
    """The model adapters keep each tool's encoding by schema identity; a schema rebuilt every run re-encoded the
    tools in the first request of every run."""
    from mcp_subagents.runtime.nesting import nested_task_tool

    async def launch(_arguments: object) -> str:
        return ""

    agents = [("reviewer", "Reviews code.", "Read, Grep"), ("tester", "Runs tests.", "Bash")]
    first, second = nested_task_tool(agents, launch), nested_task_tool(list(agents), launch)
    other = nested_task_tool(agents[:1], launch)

    assert first.schema is second.schema and first.description is second.description
    assert first.schema is not None and other.schema is not None
    assert first.schema["properties"]["subagent_type"]["enum"] == ["reviewer", "tester"]
    assert other.schema["properties"]["subagent_type"]["enum"] == ["reviewer"]


class Looper:
    """A root that launches the given nested Task calls in its first turn and then reports; every nested task calls
    Glob for ever. Counts each task's requests by its prompt."""

    def __init__(self, *launches: dict[str, Any]) -> None:
        self.launches = launches
        self.requests: dict[str, int] = {}

    def __call__(self, request: ModelRequest) -> ModelResponse:
        first = request.messages[0]
        prompt = str(first.content) if isinstance(first, UserMessage) else ""
        self.requests[prompt] = self.requests.get(prompt, 0) + 1
        if prompt.startswith("child"):
            return tool_call("Glob", {"pattern": "*"})
        last = request.messages[-1]
        if isinstance(last, ToolResultMessage):
            return text(" || ".join(result.content for result in last.results))
        calls = tuple(ToolCall(id=f"c{i}", name="Agent", arguments=launch) for i, launch in enumerate(self.launches))
        return ModelResponse(parts=calls, stop_reason="tool_use")


async def test_a_hosts_max_turns_is_shared_by_every_task_below_and_a_late_one_runs_no_request(
    tmp_path: Path,
) -> None:
    looper = Looper(nested("general-purpose", "child a"), nested("general-purpose", "child b"))
    async with connected(make_settings(tmp_path), model=FunctionModel(looper)) as client:
        with anyio.fail_after(10):
            body = text_of(await client.call_tool("Task", task("general-purpose", max_turns=2)))
            top = re.findall(r"task_id: (\w+)", body)[-1]
            tree = text_of(await client.call_tool("TaskOutput", {"task_id": top}))
            children = re.findall(r"^- (\w+) ", tree, re.MULTILINE)
            below = [text_of(await client.call_tool("TaskOutput", {"task_id": child})) for child in children]
    assert sum(looper.requests.values()) == 2
    assert looper.requests.get("child a", 0) + looper.requests.get("child b", 0) == 1
    assert "model requests that max_turns 2 allows this task and the tasks it launches are spent" in body
    spent = f"the 2 model requests that max_turns 2 allows task {top} and the tasks it launches are spent"
    assert len(below) == 2 and all(spent in result for result in below)  # each says why it stopped
    turns = sorted(re.findall(r"turns: (\d+);", result)[-1] for result in below)
    assert turns == ["0", "1"]  # the one that came second made no request


async def test_max_turns_a_nested_task_is_given_caps_its_own_tree(tmp_path: Path) -> None:
    looper = Looper({**nested("general-purpose", "child a"), "max_turns": 2})
    async with connected(make_settings(tmp_path), model=FunctionModel(looper)) as client:
        with anyio.fail_after(10):
            body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert looper.requests["child a"] == 2 and looper.requests["Go down one level."] == 2
    assert "[Stopped at the turn limit (2 turns) before the agent finished" in body


async def test_the_servers_max_turns_and_the_agents_max_turns_apply_to_each_nested_task(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, max_turns=4)
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "brief", extra="maxTurns: 2\n")
    looper = Looper(nested("brief", "child brief"), nested("general-purpose", "child plain"))
    async with connected(settings, model=FunctionModel(looper)) as client:
        with anyio.fail_after(10):
            await client.call_tool("Task", task("general-purpose"))
    assert looper.requests == {"Go down one level.": 2, "child brief": 2, "child plain": 4}


async def test_a_silent_nested_task_is_the_one_stalled_not_the_parent_waiting_for_it(tmp_path: Path) -> None:
    async def respond(request: ModelRequest) -> ModelResponse:
        if "hang" in str(request.messages[0]):
            await anyio.sleep_forever()
        if isinstance(request.messages[-1], ToolResultMessage):
            return text(f"below me: {last_results(request)[0].content}")
        return tool_call("Agent", nested("general-purpose", "hang there"))

    settings = make_settings(tmp_path, stall_after=0.05, stall_timeout=0.3)
    async with connected(settings, model=FunctionModel(respond)) as client:
        body = text_of(await client.call_tool("Task", task("general-purpose")))
    # The nested task was stopped for its silence; its parent, waiting on it, was not, and went on with the error.
    assert body.startswith("<task_result") and "below me: Error: &lt;task_error" in body
    assert "stalled (--stall-timeout): no model reply" in body
    assert body.count("stalled (--stall-timeout)") == 1 and body.rstrip().endswith("</usage>")
