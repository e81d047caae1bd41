"""Answers from more than one place: "always allow" through the host's form (the rule counts at once and in the
next session), two answers racing (the first wins, the other is told), a form still open when another place
answers, and a server restart while a question waits (shown as interrupted; resuming asks again)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.core.errors import QuestionClosedError
from mcp_subagents.core.messages import ToolResultMessage
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel, text, tool_call
from mcp_subagents.permissions.asking import Choice
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.tasks.files import read_task
from mcp_subagents.tasks.transcripts import INTERRUPTED_WHILE_ASKING
from tests.mcp.test_asking import TASK, Host, report_results
from tests.support import MODES, connected, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

COMMAND = "echo made >> made.txt"


@pytest.mark.parametrize("mode", MODES)
async def test_always_allow_adds_the_rule_now_and_to_the_projects_local_settings(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    host = Host("always")
    model = ScriptedModel(
        [tool_call("Bash", {"command": COMMAND}), tool_call("Bash", {"command": COMMAND}), report_results]
    )
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    local = json.loads((settings.cwd / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    assert local == {"permissions": {"allow": ["Bash(echo made)"]}}  # the narrowest rule: the command, not its file
    assert len(host.questions) == 1  # the second, identical call ran under the new rule
    assert "Always allow adds" in host.questions[0] and "settings.local.json" in host.questions[0]
    assert body.count("OK: ") == 2 and (settings.cwd / "made.txt").read_text(encoding="utf-8") == "made\nmade\n"

    # The next session reads the rule from the project's file, once the person trusts the project.
    trusted = make_settings(tmp_path, trust_projects=(settings.cwd,))
    later = Host("decline")
    model = ScriptedModel([tool_call("Bash", {"command": COMMAND}), report_results])
    async with connected(trusted, mode=mode, model=model, elicitation_callback=later) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert later.questions == [] and "OK: " in body


async def test_two_answers_racing_the_first_wins_and_the_other_is_told_it_closed(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("Bash", {"command": COMMAND}), report_results])
    async with running_app(make_settings(tmp_path, ask_timeout=30), model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.resources.questions.wait_for_new()
        [question] = app.tasks.open_questions(record)
        outcomes: dict[str, str] = {}

        async def answer(choice: Choice, via: str) -> None:
            try:
                await app.answers.answer(record, question.id, choice, by=via, via=via)
                outcomes[via] = "answered"
            except QuestionClosedError as exc:
                outcomes[via] = exc.message

        async with anyio.create_task_group() as group:
            group.start_soon(answer, "deny", "the dashboard")
            group.start_soon(answer, "allow", "the terminal")
        assert await app.tasks.wait(record, 10) and record.outcome is not None
    assert outcomes["the dashboard"] == "answered"
    assert outcomes["the terminal"].startswith(f"That question of task {record.id} is not open any more")
    assert "The person denied this call (the dashboard)." in record.outcome.text


async def test_a_form_still_open_when_another_place_answers_changes_nothing(tmp_path: Path) -> None:
    release = anyio.Event()
    host = Host("allow", hold=release)
    model = ScriptedModel([tool_call("Bash", {"command": COMMAND}), report_results])
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    async with (
        running_app(settings, model=model) as app,
        Client(build_server(app), mode="legacy", elicitation_callback=host) as client,
    ):
        launched = text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))
        task_id = launched.split("task_id: ")[1].split()[0]
        record = app.tasks.get(task_id, principal="local")
        async with anyio.create_task_group() as group:
            with anyio.fail_after(10):
                await record.resources.questions.wait_for_new()
            group.start_soon(client.call_tool, "TaskOutput", {"task_id": task_id, "block": False})
            with anyio.fail_after(10):
                await host.asked.wait()  # the form is in front of the person
            [question] = app.tasks.open_questions(record)
            await app.answers.answer(record, question.id, "deny", by="ann", via="the dashboard")
            release.set()  # the person clicks Allow in the stale form afterwards
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "<status>completed</status>" in body and "The person denied this call (the dashboard)." in body
    assert not (settings.cwd / "made.txt").exists()


async def test_a_restart_shows_the_waiting_question_and_resuming_asks_again(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    model = ScriptedModel([tool_call("Bash", {"command": COMMAND})])
    async with running_app(settings, model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.resources.questions.wait_for_new()
    # The server stopped while the question waited: the task is interrupted, the question still on record.
    snapshot = read_task(settings.state_dir / "tasks" / f"{record.id}.jsonl")
    assert snapshot is not None and snapshot.state == "interrupted"
    assert snapshot.waiting is not None and snapshot.waiting.question.arguments == {"command": COMMAND}

    seen: list[ModelRequest] = []

    async def respond(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return tool_call("Bash", {"command": COMMAND}) if len(seen) == 1 else text("done")

    host = Host("allow")
    async with connected(settings, model=FunctionModel(respond), elicitation_callback=host) as client:
        status = text_of(await client.call_tool("TaskOutput", {"task_id": record.id, "block": False}))
        body = text_of(await client.call_tool("Task", {**TASK, "resume": record.id}))
    assert "<status>interrupted</status>" in status and f"asks to run Bash: {COMMAND}" in status
    results = [r for m in seen[0].messages if isinstance(m, ToolResultMessage) for r in m.results]
    assert [(r.content, r.is_error) for r in results] == [(INTERRUPTED_WHILE_ASKING, True)]  # it never ran
    assert len(host.questions) == 1 and f"asks to run Bash: {COMMAND}" in host.questions[0]
    assert "done" in body and (settings.cwd / "made.txt").read_text(encoding="utf-8") == "made\n"
