"""The dashboard's HTTP API over a real port: the page, the task list and a task's transcript as display items, the
live event streams, stop (here and through another process's control channel), resume, and answers to a task's
permission question (here, and from the standalone dashboard process through the server's control channel)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from mcp_subagents.cli.dashboard import resumer
from mcp_subagents.cli.tasks import os_user
from mcp_subagents.core.messages import TextPart, ToolCall, Usage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel
from mcp_subagents.render.questions import question_headline, waiting_text
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.tasks.files import find_task
from tests.dashboard_support import (
    PERSON,
    asking_task,
    client,
    served_dashboard,
    standalone_dashboard,
    writing_model,
)
from tests.security.inert_support import HOSTILE, HOSTILE_TOOL, assert_inert
from tests.support import make_settings, running_app

pytestmark = pytest.mark.anyio

USAGE = Usage(input_tokens=1000, output_tokens=100)


class Script:
    """A model whose tasks call Glob once, then either answer or wait until released (or stopped)."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        prompt = str(request.messages[0])
        if len(request.messages) == 1:
            parts = (TextPart(text="Looking."), ToolCall(id=f"c{len(prompt)}", name="Glob", arguments={"pattern": "*"}))
            return ModelResponse(parts=parts, stop_reason="tool_use", usage=USAGE)
        if "wait" in prompt and "go on" not in str(request.messages[-1]):
            self.waiting.set()
            await self.release.wait()
        return ModelResponse(parts=(TextPart(text="All done."),), stop_reason="end_turn", usage=USAGE)


async def finished(app: Subagents, prompt: str = "quick") -> str:
    record = app.launch(TaskRequest(description="a quick look", prompt=prompt, subagent_type="general-purpose"))
    with anyio.fail_after(10):
        await record.done.wait()
    return record.id


async def events(response: Any) -> AsyncIterator[tuple[str, Any]]:
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


async def test_the_page_needs_the_secret_and_the_api_lists_tasks_and_transcripts(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with running_app(settings, model=FunctionModel(Script())) as app, served_dashboard(app) as dashboard:
        task_id = await finished(app)
        async with client(dashboard, with_token=False) as anonymous:
            assert (await anonymous.get("/")).status_code == 403
            assert (await anonymous.get("/api/tasks")).status_code == 403
            page = await anonymous.get("/", params={"token": dashboard.access.token})
            assert page.status_code == 200 and dashboard.access.token in page.text
            assert (await anonymous.get("/static/dashboard.js")).headers["content-type"].startswith("text/javascript")
            assert (await anonymous.get("/static/../dashboard.py")).status_code == 404
        async with client(dashboard) as api:
            (row,) = (await api.get("/api/tasks")).json()["tasks"]
            assert (row["task_id"], row["state"], row["turns"], row["tool_uses"]) == (task_id, "completed", 2, 1)
            assert row["cost_usd"] == pytest.approx(2 * (1000 * 3 + 100 * 15) / 1e6)
            detail = (await api.get(f"/api/tasks/{task_id[:8]}")).json()
    kinds = [item["kind"] for item in detail["items"]]
    assert kinds == ["started", "user", "usage", "assistant", "result", "usage", "assistant", "end"]
    assistant = detail["items"][3]
    assert assistant["text"] == "Looking." and assistant["tool_calls"][0]["name"] == "Glob"
    assert detail["items"][-1]["state"] == "completed" and "All done." in detail["items"][-1]["text"]


async def test_the_streams_show_a_task_appear_grow_and_stop_through_the_control_channel(tmp_path: Path) -> None:
    script = Script()
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with (
        running_app(settings, model=FunctionModel(script)) as app,
        served_dashboard(app, here=False) as dashboard,
        client(dashboard) as api,
        api.stream("GET", "/api/events") as listing,
    ):
        stream = events(listing)
        with anyio.fail_after(10):
            name, data = await anext(stream)
        assert (name, data) == ("tasks", {"tasks": []})
        record = app.launch(TaskRequest(description="slow job", prompt="wait", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            async for _name, data in stream:
                if data["tasks"] and data["tasks"][0]["state"] == "running" and data["tasks"][0]["tool_uses"] == 1:
                    break
            await script.waiting.wait()
        async with api.stream("GET", f"/api/tasks/{record.id}/events") as followed:
            task_stream = events(followed)
            seen: list[str] = []
            with anyio.fail_after(10):
                async for name, data in task_stream:
                    if name == "items":
                        seen += [item["kind"] for item in data["items"]]
                    if name == "task" and data["task"]["current_tools"] == [] and "result" in seen:
                        break
            stopped = await api.post(f"/api/tasks/{record.id}/stop", json={})
            assert stopped.status_code == 202
            end: dict[str, Any] = {}
            with anyio.fail_after(10):
                async for name, data in task_stream:
                    if name == "items" and any(item["kind"] == "end" for item in data["items"]):
                        (end,) = [item for item in data["items"] if item["kind"] == "end"]
                        break
        assert end["state"] == "stopped" and record.state == "stopped"
        again = await api.post(f"/api/tasks/{record.id}/stop", json={})
        assert again.status_code == 409 and "already ended: stopped" in again.json()["error"]


async def test_resume_from_the_dashboard_continues_the_conversation_for_its_owner(tmp_path: Path) -> None:
    script = Script()
    async with (
        running_app(make_settings(tmp_path), model=FunctionModel(script)) as app,
        served_dashboard(app) as dashboard,
        client(dashboard) as api,
    ):
        first = app.launch(
            TaskRequest(description="bob's job", prompt="quick", subagent_type="Explore"), principal="token:bob"
        )
        with anyio.fail_after(10):
            await first.done.wait()
        answer = await api.post(f"/api/tasks/{first.id}/resume", json={"prompt": "go on, please"})
        assert answer.status_code == 202
        resumed = app.tasks.get(answer.json()["task_id"], principal="token:bob")  # still bob's
        with anyio.fail_after(10):
            await resumed.done.wait()
        assert resumed.resumed_from == first.id and resumed.agent == "Explore" and resumed.state == "completed"
        bad = await api.post(f"/api/tasks/{first.id}/resume", json={"prompt": "  "})
        assert bad.status_code == 400 and "prompt" in bad.json()["error"]


async def test_a_resumed_task_can_be_read_as_soon_as_resume_answers(tmp_path: Path) -> None:
    """The page opens the new task's event stream right after the answer; a stream for a transcript not yet created
    was a 404, and the browser gives up on such a stream for good."""
    async with running_app(make_settings(tmp_path), model=FunctionModel(Script())) as app:
        first = await finished(app)
        new_id = await resumer(app)(first, "go on, please")
        assert app.tasks.transcript_path(new_id).is_file()
        assert find_task(app.settings.state_dir, new_id).stem == new_id


@pytest.mark.parametrize("command", [["dashboard"], ["serve", "--dashboard"]])
async def test_the_commands_print_the_secret_address_and_serve_the_state_directory(
    tmp_path: Path, command: list[str]
) -> None:
    async with standalone_dashboard(tmp_path, *command) as api:
        assert (await api.get("/api/tasks")).json() == {"tasks": []}
        assert (await api.get("/api/tasks", headers={"X-Dashboard-Token": ""})).status_code == 403


async def test_a_waiting_question_is_listed_answered_once_and_wrong_answers_say_why(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with (
        running_app(settings, model=writing_model(settings.cwd)) as app,
        served_dashboard(app) as dashboard,
        client(dashboard) as api,
    ):
        record, question = await asking_task(app)
        (row,) = (await api.get("/api/tasks")).json()["tasks"]
        assert row["state"] == "waiting" and row["waiting"]["id"] == question.id
        assert "waiting for you: " + row["waiting"]["headline"] == waiting_text(question.question)
        local = settings.cwd / ".claude" / "settings.local.json"
        assert row["waiting"]["always"] == f"Always allow adds Edit(./notes.txt) to {local}."
        answer = f"/api/tasks/{record.id}/answer"
        wrong = [
            await api.post(answer, json={"question_id": question.id, "choice": "yes"}),
            await api.post(answer, json={"question_id": "permission-../../x", "choice": "allow"}),
            await api.post(answer, json={"choice": "allow"}),
            await api.post(answer, content=b"allow", headers={"Content-Type": "application/json"}),
            await api.post(
                "/api/tasks/0123456789abcdef0123456789abcdef/answer",
                json={"question_id": question.id, "choice": "allow"},
            ),
        ]
        assert [response.status_code for response in wrong] == [400, 400, 400, 400, 404]
        assert "choice must be allow, always or deny" in wrong[0].json()["error"]
        assert "question_id" in wrong[1].json()["error"] and "question_id" in wrong[2].json()["error"]
        assert record.state == "waiting"

        given = await api.post(answer, json={"question_id": question.id, "choice": "allow"})
        assert given.status_code == 200
        assert given.json()["text"] == f"Allowed once by {PERSON} via the dashboard."
        with anyio.fail_after(10):
            await record.done.wait()
        again = await api.post(answer, json={"question_id": question.id, "choice": "deny"})
        detail = (await api.get(f"/api/tasks/{record.id}")).json()
    assert again.status_code == 409 and "is not open any more" in again.json()["error"]
    assert record.state == "completed" and (settings.cwd / "notes.txt").read_text() == "written\n"
    assert not (settings.cwd / ".claude" / "settings.local.json").exists()  # allowed once: no rule
    asked = [item for item in detail["items"] if item["kind"] in ("question", "answer")]
    assert asked == [
        {"kind": "question", "at": asked[0]["at"], "text": question_headline(question.question)},
        {"kind": "answer", "at": asked[1]["at"], "answer": "allowed", "text": f"allowed by {PERSON} via the dashboard"},
    ]
    assert detail["task"]["waiting"] is None


async def test_the_standalone_dashboard_answers_through_the_control_channel_of_the_tasks_server(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with (
        running_app(settings, model=writing_model(settings.cwd)) as app,
        standalone_dashboard(tmp_path) as api,  # another process, over the same state directory
    ):
        record, question = await asking_task(app)
        answer = f"/api/tasks/{record.id}/answer"
        given = await api.post(answer, json={"question_id": question.id, "choice": "always"})
        assert given.status_code == 202, given.text
        with anyio.fail_after(10):
            await record.done.wait()
        again = await api.post(answer, json={"question_id": question.id, "choice": "always"})
    assert again.status_code == 409 and "is not open any more" in again.json()["error"]
    assert question.answer is not None and question.answer.always
    assert (question.answer.by, question.answer.via) == (os_user(), "the dashboard")
    local = json.loads((settings.cwd / ".claude" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == ["Edit(./notes.txt)"]
    assert (settings.cwd / "notes.txt").read_text() == "written\n"


class HostileScript:
    """A model that calls a tool whose name it made up, with hostile arguments, then answers with hostile text and
    a lone surrogate."""

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            call = ToolCall(id="c1", name=HOSTILE_TOOL, arguments={"file_path": "notes\u202e.md\x1b[8m"})
            return ModelResponse(parts=(TextPart(text=HOSTILE), call), stop_reason="tool_use", usage=USAGE)
        return ModelResponse(parts=(TextPart(text=HOSTILE + " \ud800"),), stop_reason="end_turn", usage=USAGE)


async def test_the_api_sends_a_hostile_tasks_text_inert(tmp_path: Path) -> None:
    # Before, the model's escape sequences, bidi overrides and zero-width characters went out as they were (the
    # page drew them), and a lone surrogate in the transcript made the task's page answer 500.
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with running_app(settings, model=FunctionModel(HostileScript())) as app, served_dashboard(app) as dashboard:
        record = app.launch(TaskRequest(description=f"look {HOSTILE}", prompt="go", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
        async with client(dashboard) as api:
            listed = await api.get("/api/tasks")
            detail = await api.get(f"/api/tasks/{record.id}")
            streamed: Any = None
            async with api.stream("GET", f"/api/tasks/{record.id}/events") as response:
                async for name, data in events(response):
                    if name == "items":
                        streamed = data
                        break
    assert listed.status_code == 200 and detail.status_code == 200
    for answer in (listed.json(), detail.json(), streamed):
        assert_inert("\n".join(_strings(answer)))
    items = detail.json()["items"]
    assistant = next(item for item in items if item["kind"] == "assistant")
    assert assistant["tool_calls"][0]["name"] == "Read\\x1b]52;c;aGk=\\x07\\u202e"
    assert assistant["tool_calls"][0]["arguments"] == {"file_path": "notes\\u202e.md\\x1b[8m"}
    assert " \ufffd</task_result>" in items[-1]["text"]  # the loop made the lone surrogate U+FFFD as it came in


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        pairs = cast("dict[str, Any]", value).items()
        return [text for key, item in pairs for text in (key, *_strings(item))]
    if isinstance(value, list):
        return [text for item in cast("list[Any]", value) for text in _strings(item)]
    return []
