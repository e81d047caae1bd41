"""Answering from the MCP App view, over MCP in both protocol eras: a task waiting on a question carries it in
`TaskList` (headline, details, the rule "Always allow" adds, who asks, when) with its token in `_meta`; `TaskAnswer`
with that token allows once, always (the rule goes to the project's `.claude/settings.local.json` and the next like
call runs unasked) or denies; of two answers the first wins and the second finds the question closed; a finished
task the person launched carries the line the view tells the conversation."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise

from mcp_subagents.core.messages import ToolResultMessage
from mcp_subagents.mcp.answer_tokens import ANSWER_TOKENS_META
from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.service import Subagents
from tests.support import MODES, make_settings, running_app, text_of, write_agent

pytestmark = pytest.mark.anyio

APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
TASK = {"description": "build it", "prompt": "Build.", "subagent_type": "general-purpose", "run_in_background": True}


def report_results(request: ModelRequest) -> ModelResponse:
    """The final answer quotes every tool result of the run, so tests see what the subagent saw."""
    results = [r for m in request.messages if isinstance(m, ToolResultMessage) for r in m.results]
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


def commands_then_report(*commands: str) -> FunctionModel:
    """Runs `commands` one per turn, then reports what each gave."""

    def respond(request: ModelRequest) -> ModelResponse:
        done = len(request.messages) // 2
        return tool_call("Bash", {"command": commands[done]}) if done < len(commands) else report_results(request)

    return FunctionModel(respond)


async def launch_and_wait_for_question(client: Client, app: Subagents) -> tuple[str, dict[str, Any], str]:
    """Launch TASK in the background; once it asks, its TaskList entry and the question's token."""
    task_id = text_of(await client.call_tool("Task", TASK)).split("task_id: ")[1].split()[0]
    record = app.tasks.get(task_id, principal="local")
    with anyio.fail_after(15):
        await app.tasks.root(record).resources.questions.wait_for_new()
    listing = await client.call_tool("TaskList", {})
    assert listing.structured_content is not None and listing.meta is not None
    [entry] = [entry for entry in listing.structured_content["tasks"] if entry["task_id"] == task_id]
    [question] = entry["questions"]
    return task_id, entry, listing.meta[ANSWER_TOKENS_META][question["id"]]


async def answer(client: Client, entry: dict[str, Any], token: str, choice: str) -> types.CallToolResult:
    question = entry["questions"][0]
    arguments = {"task_id": entry["task_id"], "question_id": question["id"], "choice": choice, "token": token}
    return await client.call_tool("TaskAnswer", arguments)


async def result_of(client: Client, task_id: str) -> str:
    return text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 10_000}))


@pytest.mark.parametrize("mode", MODES)
async def test_the_card_shows_the_question_and_allow_once_lets_the_call_run(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    before = time.time()
    async with running_app(settings, model=commands_then_report("echo made > made.txt")) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            task_id, entry, token = await launch_and_wait_for_question(client, app)
            listing_text = text_of(await client.call_tool("TaskList", {}))
            answered = await answer(client, entry, token, "allow")
            body = await result_of(client, task_id)
            (after,) = (await client.call_tool("TaskList", {})).structured_content["tasks"]
    question = entry["questions"][0]
    assert entry["state"] == "waiting" and entry["parent_task_id"] is None and entry["end_notice"] is None
    assert (question["task_id"], question["agent"], question["tool"]) == (task_id, "general-purpose", "Bash")
    assert question["headline"] == "Subagent 'general-purpose' asks to run Bash: echo made > made.txt"
    assert question["details"].startswith(f"Task {task_id}.\n\nCommand:\necho made > made.txt\n")
    assert "Why it asks: " in question["details"] and question["headline"] not in question["details"]
    assert question["rule"] is not None and question["always"] == (
        f"Always allow adds {question['rule']} to {settings.cwd}/.claude/settings.local.json."
    )
    assert question["always"] not in question["details"]
    assert before <= question["asked_at"] <= time.time()
    assert "[waiting · " in listing_text and question["headline"] in listing_text
    assert not answered.is_error
    assert text_of(answered) == f"Allowed once: {question['headline']}. The task goes on."
    assert "<status>completed</status>" in body and "OK: " in body and "Permission denied" not in body
    assert (settings.cwd / "made.txt").read_text(encoding="utf-8") == "made\n"
    assert (after["state"], after["questions"]) == ("completed", [])
    assert after["end_notice"] == (
        f'Subagent task {task_id} (general-purpose: build it) completed; read its result with TaskOutput {{"task_id": '
        f'"{task_id}"}}.'
    )


@pytest.mark.parametrize("mode", MODES)
async def test_always_writes_the_rule_and_the_next_like_call_runs_unasked(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    model = commands_then_report("make first", "make first")
    async with running_app(settings, model=model) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            task_id, entry, token = await launch_and_wait_for_question(client, app)
            record = app.tasks.live(task_id)
            answered = await answer(client, entry, token, "always")
            body = await result_of(client, task_id)
    assert record is not None
    local = json.loads((settings.cwd / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    question = entry["questions"][0]
    assert question["rule"] == "Bash(make first)" and local["permissions"]["allow"] == ["Bash(make first)"]
    assert text_of(answered) == (
        f"Always allowed: {question['headline']}. Bash(make first) is allowed from now on (added to "
        f"{settings.cwd}/.claude/settings.local.json)."
    )
    assert "<status>completed</status>" in body and "Permission denied" not in body
    assert body.count("make: *** No rule to make target 'first'") == 2  # both calls ran
    assert record.resources.questions.asked == 1  # the second was not asked


@pytest.mark.parametrize("mode", MODES)
async def test_deny_refuses_the_call_and_says_who_answered_where(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with running_app(settings, model=commands_then_report("echo made > made.txt")) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            task_id, entry, token = await launch_and_wait_for_question(client, app)
            answered = await answer(client, entry, token, "deny")
            again = await answer(client, entry, token, "allow")
            body = await result_of(client, task_id)
    assert text_of(answered) == f"Denied: {entry['questions'][0]['headline']}. The task goes on without that call."
    assert "ERR: Error: Permission denied: The person denied this call (the App view)." in body
    assert not (settings.cwd / "made.txt").exists()
    assert again.is_error and text_of(again).startswith(f"That question of task {task_id} is not open any more")


@pytest.mark.parametrize("mode", MODES)
async def test_of_two_answers_racing_the_first_wins(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with running_app(settings, model=commands_then_report("make first")) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            task_id, entry, token = await launch_and_wait_for_question(client, app)
            results: dict[str, types.CallToolResult] = {}

            async def give(choice: str) -> None:
                results[choice] = await answer(client, entry, token, choice)

            async with anyio.create_task_group() as group:
                group.start_soon(give, "always")  # writes the settings file in a worker thread before it settles
                group.start_soon(give, "deny")
            body = await result_of(client, task_id)
    [winner] = [choice for choice, result in results.items() if not result.is_error]
    [loser] = [result for result in results.values() if result.is_error]
    assert text_of(loser).startswith(f"That question of task {task_id} is not open any more: it was answered already")
    if winner == "deny":
        assert "Permission denied: The person denied this call (the App view)." in body
    else:
        assert "No rule to make target 'first'" in body and "Permission denied" not in body


@pytest.mark.parametrize("mode", MODES)
async def test_a_nested_tasks_question_is_on_the_card_of_the_task_the_person_launched(
    tmp_path: Path, mode: str
) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.user_agents_dir is not None and settings.cwd is not None
    write_agent(settings.user_agents_dir, "lead", description="delegates")
    write_agent(settings.user_agents_dir, "worker", description="works")

    def respond(request: ModelRequest) -> ModelResponse:
        if "Delegate." in str(request.messages[0]):
            if len(request.messages) == 1:
                return tool_call("Agent", {"description": "make", "prompt": "Work.", "subagent_type": "worker"})
            return report_results(request)
        if len(request.messages) == 1:
            return tool_call("Bash", {"command": "echo made > made.txt"})
        return report_results(request)

    launch = {**TASK, "subagent_type": "lead", "prompt": "Delegate."}
    async with running_app(settings, model=FunctionModel(respond)) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            lead = text_of(await client.call_tool("Task", launch)).split("task_id: ")[1].split()[0]
            with anyio.fail_after(15):
                await app.tasks.get(lead, principal="local").resources.questions.wait_for_new()
            listing = await client.call_tool("TaskList", {})
            assert listing.structured_content is not None and listing.meta is not None
            entries = {entry["agent"]: entry for entry in listing.structured_content["tasks"]}
            token = listing.meta[ANSWER_TOKENS_META][entries["lead"]["questions"][0]["id"]]
            answered = await answer(client, entries["lead"], token, "allow")
            body = await result_of(client, lead)
    top, below = entries["lead"], entries["worker"]
    assert (top["state"], below["state"], below["parent_task_id"]) == ("waiting", "waiting", lead)
    assert top["questions"][0]["task_id"] == below["task_id"] and top["questions"][0]["agent"].startswith("worker")
    assert below["questions"] == [] and below["end_notice"] is None
    assert not answered.is_error and "<status>completed</status>" in body
    assert (settings.cwd / "made.txt").exists()
