"""Task lifecycle: background runs, the queue, host deadlines, stop, cancellation, progress, watchdogs, resume."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_subagents.core.messages import ToolResultMessage, UserMessage
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel, text, tool_call
from tests.processes import is_running, wait_until_gone
from tests.support import MODES, connected, make_settings, matched, running_app, text_of, write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "slow work", "prompt": "Work slowly.", "subagent_type": "general-purpose"}


class GatedModel:
    """Answers each request only when the test opens the gate for it; counts requests that arrived."""

    provider = "gated"

    def __init__(self, reply: str = "done") -> None:
        self.reply = reply
        self.arrived = anyio.Event()
        self.gate = anyio.Event()
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        self.requests.append(request)
        self.arrived.set()
        await self.gate.wait()
        return text(f"{self.reply} {len(self.requests)}")


def task_id_in(body: str) -> str:
    match = re.search(r"task_id: (\w+)", body) or re.search(r'"task_id": "(\w+)"', body)
    assert match, body
    return match.group(1)


@pytest.mark.parametrize("mode", MODES)
async def test_background_task_returns_at_once_and_task_output_delivers_the_result(tmp_path: Path, mode: str) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        launched = await client.call_tool("Task", {**TASK, "run_in_background": True})
        body = text_of(launched)
        task_id = task_id_in(body)
        output_file = Path(matched(r"output_file: (\S+)", body))
        assert "TaskOutput" in body and output_file.is_file()
        with anyio.fail_after(5):
            await model.arrived.wait()
        peek = await client.call_tool("TaskOutput", {"task_id": task_id, "block": False})
        assert "<status>running</status>" in text_of(peek) and "<progress>turn 1 of 50" in text_of(peek)
        model.gate.set()
        final = await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000})
    assert "<status>completed</status>" in text_of(final)
    assert '<task_result agent="general-purpose">done 1</task_result>' in text_of(final)
    assert "done 1" in output_file.read_text(encoding="utf-8")


async def test_definition_background_flag_runs_in_the_background(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    write_agent(settings.cwd / ".claude" / "agents", "watcher", extra="background: true\n")
    model = GatedModel()
    async with connected(settings, model=model) as client:
        launched = await client.call_tool("Task", {**TASK, "subagent_type": "watcher"})
        model.gate.set()
    assert "launched in the background" in text_of(launched)


async def test_tasks_past_the_limit_wait_in_order_with_their_queue_position(tmp_path: Path) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path, max_concurrent=1), model=model) as client:
        ids = [
            task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))) for _ in range(3)
        ]
        with anyio.fail_after(5):
            await model.arrived.wait()
        second = text_of(await client.call_tool("TaskOutput", {"task_id": ids[1], "block": False}))
        third = text_of(await client.call_tool("TaskOutput", {"task_id": ids[2], "block": False}))
        assert "<status>queued</status>" in second and "<queue_position>1 of 2</queue_position>" in second
        assert "<queue_position>2 of 2</queue_position>" in third
        model.gate.set()
        results = [text_of(await client.call_tool("TaskOutput", {"task_id": i, "timeout": 5000})) for i in ids]
    assert ["done 1" in results[0], "done 2" in results[1], "done 3" in results[2]] == [True, True, True]


@pytest.mark.parametrize("mode", MODES)
async def test_a_long_foreground_task_is_handed_over_before_the_host_deadline(tmp_path: Path, mode: str) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path, foreground_deadline=0.2), mode=mode, model=model) as client:
        handed = text_of(await client.call_tool("Task", TASK))
        task_id = task_id_in(handed)
        assert "still running after 0.2 s" in handed and "nothing is lost" in handed
        waited = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 600000}))
        assert "<status>running</status>" in waited  # TaskOutput too returns before the deadline
        model.gate.set()
        final = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert "done 1</task_result>" in final


async def test_task_stop_cancels_a_task_blocked_in_a_model_call(tmp_path: Path) -> None:
    model = GatedModel()
    settings = make_settings(tmp_path)
    async with connected(settings, model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True})))
        with anyio.fail_after(5):
            await model.arrived.wait()
        with anyio.fail_after(1):
            stopped = await client.call_tool("TaskStop", {"task_id": task_id})
        assert text_of(stopped) == f"Successfully stopped task: {task_id} (slow work)" and not stopped.is_error
        output = await client.call_tool("TaskOutput", {"task_id": task_id})
        again = text_of(await client.call_tool("TaskStop", {"task_id": task_id}))
    status = text_of(output)
    assert "<status>stopped</status>" in status and "was stopped" in status
    assert '<task_error agent="general-purpose">' in status and output.is_error  # a task_error is always isError
    assert "already finished with status stopped" in again
    state_dir = settings.state_dir / "tasks"
    assert "was stopped" in (state_dir / f"{task_id}.output").read_text(encoding="utf-8")
    last = json.loads((state_dir / f"{task_id}.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert last["type"] == "end" and last["state"] == "stopped"


@pytest.mark.parametrize("mode", MODES)
async def test_a_foreground_task_stopped_from_another_call_answers_an_error(tmp_path: Path, mode: str) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        results: list[Any] = []
        task_id = ""

        async def foreground() -> None:
            results.append(await client.call_tool("Task", TASK))

        async with anyio.create_task_group() as group:
            group.start_soon(foreground)
            with anyio.fail_after(5):
                await model.arrived.wait()
            task_id = next((tmp_path / "state" / "tasks").glob("*.output")).stem
            with anyio.fail_after(5):
                await client.call_tool("TaskStop", {"task_id": task_id})
    [result] = results
    assert text_of(result).startswith(f'<task_error agent="general-purpose">Task {task_id} was stopped after')
    assert result.is_error


async def test_task_stop_kills_the_bash_processes_of_the_task(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    command = f"sleep 1000 & echo \"$$ $!\" > '{fifo}'; wait"
    model = ScriptedModel([tool_call("Bash", {"command": command})])
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    async with connected(settings, model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True})))
        with anyio.fail_after(10):
            shell, sleeper = map(int, (await anyio.to_thread.run_sync(fifo.read_text)).split())
        assert is_running(shell) and is_running(sleeper)
        with anyio.fail_after(2):
            await client.call_tool("TaskStop", {"task_id": task_id})
        await wait_until_gone(shell)
        await wait_until_gone(sleeper)


async def test_host_cancellation_stops_a_foreground_task(tmp_path: Path) -> None:
    model = GatedModel()
    async with running_app(make_settings(tmp_path), model=model) as app:
        async with Client(build_server(app), mode="legacy") as client:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "Task", TASK)
                    await model.arrived.wait()
                    group.cancel_scope.cancel()  # the client sends notifications/cancelled
            [record] = app.tasks._records.values()  # pyright: ignore[reportPrivateUsage]
            with anyio.fail_after(5):
                await record.done.wait()
            still = await client.list_tools()
    assert record.state == "stopped"
    assert len(still.tools) == 3


@pytest.mark.parametrize("mode", MODES)
async def test_progress_notifications_report_turns_and_tools(tmp_path: Path, mode: str) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    model = ScriptedModel([tool_call("Glob", {"pattern": "*"}), text("done")])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        result = await client.call_tool("Task", TASK, progress_callback=on_progress)
        with anyio.fail_after(5):
            while len(seen) < 3:  # over real streams notifications may trail the result
                await anyio.lowlevel.checkpoint()
    assert not result.is_error
    assert [message for _, message in seen] == ["turn 1 of 50", "turn 1: Glob", "turn 2 of 50"]
    assert [progress for progress, _ in seen] == [1, 2, 3]


async def test_an_idle_task_fails_with_a_clear_reason(tmp_path: Path) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path, idle_timeout=0.2), model=model) as client:
        result = await client.call_tool("Task", TASK)
    assert result.is_error
    assert "made no progress" in text_of(result) and "0.2 s" in text_of(result)


async def test_a_task_past_its_wall_clock_limit_fails(tmp_path: Path) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path, task_timeout=0.2), model=model) as client:
        result = await client.call_tool("Task", TASK)
    assert result.is_error and "exceeded its time limit of 0.2 s" in text_of(result)


@pytest.mark.parametrize("mode", MODES)
async def test_resume_continues_a_finished_conversation(tmp_path: Path, mode: str) -> None:
    def second(request: ModelRequest) -> ModelResponse:
        prompts = [m.content for m in request.messages if isinstance(m, UserMessage)]
        return text(f"continuing after {prompts}")

    model = ScriptedModel([tool_call("Glob", {"pattern": "*"}), text("first answer"), second])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        first = text_of(await client.call_tool("Task", TASK))
        task_id = task_id_in(first)
        resumed = text_of(await client.call_tool("Task", {**TASK, "prompt": "And then?", "resume": task_id}))
    assert f"[Resumed task {task_id}.]" in resumed
    assert "continuing after ['Work slowly.', 'And then?']" in resumed
    history = model.requests[-1].messages
    assert any(isinstance(m, ToolResultMessage) for m in history)


async def test_resume_of_a_running_or_unknown_task_is_refused(tmp_path: Path) -> None:
    model = GatedModel()
    async with connected(make_settings(tmp_path), model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True})))
        busy = await client.call_tool("Task", {**TASK, "resume": task_id})
        unknown = await client.call_tool("Task", {**TASK, "resume": "nope"})
        model.gate.set()
    assert busy.is_error and "still running" in text_of(busy)
    assert unknown.is_error and text_of(unknown) == "No task found with ID: nope"


@pytest.mark.parametrize("mode", MODES)
async def test_resume_with_another_agent_is_refused_and_says_which_agent_resumes(tmp_path: Path, mode: str) -> None:
    model = ScriptedModel([text("first answer"), text("second answer")])
    async with connected(make_settings(tmp_path), mode=mode, model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", TASK)))
        other = {**TASK, "subagent_type": "Explore", "prompt": "And then?", "resume": task_id}
        refused = await client.call_tool("Task", other)
        same = await client.call_tool("Task", {**other, "subagent_type": "general-purpose"})
    assert refused.is_error
    assert text_of(refused) == (
        f"Task {task_id} was run by the general-purpose agent, and resume continues it with that agent, not "
        f'Explore. Call Task again with subagent_type "general-purpose" to resume it, or without resume to start a '
        "new Explore task."
    )
    assert len(model.requests) == 2  # the refused call reached no model
    assert f"[Resumed task {task_id}.]" in text_of(same) and not same.is_error


async def test_shutdown_cancels_running_tasks_and_kills_their_processes(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    model = ScriptedModel([tool_call("Bash", {"command": f"sleep 1000 & echo $! > '{fifo}'; wait"})])
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    async with connected(settings, model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True})))
        with anyio.fail_after(10):
            sleeper = int(await anyio.to_thread.run_sync(fifo.read_text))
    await wait_until_gone(sleeper)
    last = (settings.state_dir / "tasks" / f"{task_id}.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(last)["state"] == "interrupted"
    async with connected(settings, model=ScriptedModel([text("picked up")])) as client:
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
        resumed = text_of(await client.call_tool("Task", {**TASK, "prompt": "go on", "resume": task_id}))
    assert "<status>interrupted</status>" in status
    assert "picked up" in resumed and f"[Resumed task {task_id}.]" in resumed


async def test_function_model_is_usable_for_tests(tmp_path: Path) -> None:
    model = FunctionModel(lambda request: text(f"{len(request.messages)} message(s)"))
    async with connected(make_settings(tmp_path), model=model) as client:
        result = await client.call_tool("Task", TASK)
    assert "1 message(s)" in text_of(result)


async def test_hosts_that_accept_log_notifications_receive_subagent_events(tmp_path: Path) -> None:
    logged: list[dict[str, str]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.data)

    model = ScriptedModel([tool_call("Glob", {"pattern": "*"}, say="Looking."), text("done")])
    async with connected(make_settings(tmp_path), mode="legacy", model=model, logging_callback=on_log) as client:
        await client.call_tool("Task", TASK)
        with anyio.fail_after(5):
            while len(logged) < 4:
                await anyio.lowlevel.checkpoint()
    events = [entry["event"] for entry in logged]
    assert events[0].startswith("[turn 1] assistant: Looking. (calls: Glob)")
    assert events[1].startswith("[turn 1] tool Glob")
    assert events[2].startswith("[turn 1] Glob -> ok")
    assert all(entry["agent"] == "general-purpose" for entry in logged)


async def test_task_stop_kills_what_an_earlier_bash_call_left_running(tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    never = anyio.Event()

    async def hang(_request: ModelRequest) -> ModelResponse:
        await never.wait()
        raise AssertionError("unreachable")

    command = f"sleep 1000 >/dev/null 2>&1 & echo $! > '{fifo}'"
    model = ScriptedModel([tool_call("Bash", {"command": command}), hang])
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    async with connected(settings, model=model) as client:
        task_id = task_id_in(text_of(await client.call_tool("Task", {**TASK, "run_in_background": True})))
        with anyio.fail_after(10):
            sleeper = int(await anyio.to_thread.run_sync(fifo.read_text))
            while len(model.requests) < 2:  # the Bash call has returned and the model is asked again
                await anyio.lowlevel.checkpoint()
        assert is_running(sleeper)
        await client.call_tool("TaskStop", {"task_id": task_id})
        await wait_until_gone(sleeper)


async def test_a_completed_tasks_background_process_lives_until_the_server_stops(tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    command = f"sleep 1000 >/dev/null 2>&1 & echo $! > '{fifo}'"
    model = ScriptedModel([tool_call("Bash", {"command": command}), text("started it")])
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    async with connected(settings, model=model) as client:
        sleepers: list[int] = []
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "Task", TASK)
            with anyio.fail_after(10):
                sleepers.append(int(await anyio.to_thread.run_sync(fifo.read_text)))
        assert is_running(sleepers[0])  # the task completed; what it started on purpose keeps running
    await wait_until_gone(sleepers[0])  # until the server shuts down
