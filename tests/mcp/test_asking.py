"""Asking the person in both protocol eras: 2025-11-25 `elicitation/create` while a call about the task waits, and
2026-07-28 `InputRequiredResult` round trips of that call itself. The SDK client answers both with its elicitation
callback, as a host does: accepted, declined, dismissed, unanswered, several questions, answers after the handover
deadline, questions of a task in the background brought to the person by TaskOutput."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_subagents.core.messages import TextPart, ToolResultMessage
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call, tool_calls
from tests.support import MODES, connected, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "change things", "prompt": "Do it.", "subagent_type": "general-purpose"}

Reply = Literal["allow", "always", "decline", "cancel", "unchecked"]


def report_results(request: ModelRequest) -> ModelResponse:
    """The final answer quotes every tool result of the run, so tests see what the subagent saw."""
    results = [r for m in request.messages if isinstance(m, ToolResultMessage) for r in m.results]
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


class Host:
    """An elicitation callback that answers as scripted (the last reply repeats) and records every question."""

    def __init__(self, *replies: Reply, hold: anyio.Event | None = None, delay: float = 0.0) -> None:
        self.replies: Sequence[Reply] = replies or ("allow",)
        self.hold = hold
        self.delay = delay
        self.questions: list[str] = []
        self.asked = anyio.Event()

    async def __call__(self, context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        reply = self.replies[min(len(self.questions), len(self.replies) - 1)]
        self.questions.append(params.message)
        self.asked.set()
        if self.hold is not None:
            await self.hold.wait()
        if self.delay:
            await anyio.sleep(self.delay)  # the person takes longer than the handover deadline; nothing to wait on
        match reply:
            case "allow":
                return types.ElicitResult(action="accept", content={"allow": True})
            case "always":
                return types.ElicitResult(action="accept", content={"allow": True, "always": True})
            case "unchecked":
                return types.ElicitResult(action="accept", content={"allow": False})
            case "decline":
                return types.ElicitResult(action="decline")
            case "cancel":
                return types.ElicitResult(action="cancel")


@pytest.mark.parametrize("mode", MODES)
async def test_an_allowed_call_runs_and_the_form_shows_tool_agent_and_whole_path(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    deep = "/".join(["nested"] * 80) + "/new.txt"  # a path far longer than any summary would keep
    (settings.cwd / deep).parent.mkdir(parents=True)
    host = Host("allow")
    model = ScriptedModel([tool_call("Write", {"file_path": deep, "content": "hello"}), report_results])
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        result = await client.call_tool("Task", TASK)
    body = text_of(result)
    assert not result.is_error and "OK: File created" in body and "Permission denied" not in body
    assert (settings.cwd / deep).read_text(encoding="utf-8") == "hello"
    [question] = host.questions
    first = question.split("\n")[0]  # all a host that shows one line shows: the tool and the path, cut in the middle
    assert first.startswith("Subagent 'general-purpose' asks to run Write: nested/") and first.endswith(
        "nested/new.txt"
    )
    assert "characters)…" in first
    assert f"File:\n{deep}\n" in question
    assert 'add "Edit(./' in question  # the rule that would allow it without asking


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reply", ["decline", "unchecked"])
async def test_a_refused_question_denies_and_says_what_the_person_did(tmp_path: Path, mode: str, reply: Reply) -> None:
    why = "The person denied this call (the host's permission form)."
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    host = Host(reply)
    model = ScriptedModel([tool_call("Bash", {"command": "git push origin main"}), report_results])
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert f"ERR: Error: Permission denied: {why}" in body
    assert 'add "Bash(git push origin main)" to permissions.allow' in body  # what would allow it next time
    assert 'add "Bash(git push *)" instead' in body
    assert "[Permission denied for 1 tool call(s):" in body
    assert len(host.questions) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_several_questions_in_one_run_are_each_asked(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    long_command = "echo " + " ".join(f"word{i}" for i in range(300)) + " > words.txt"
    host = Host("allow", "decline", "allow")
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "one.txt", "content": "1"}),
            tool_call("Write", {"file_path": "two.txt", "content": "2"}),
            tool_call("Bash", {"command": long_command}),
            report_results,
        ]
    )
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert len(host.questions) == 3
    assert "File:\none.txt" in host.questions[0] and "File:\ntwo.txt" in host.questions[1]
    assert f"Command:\n{long_command}\n" in host.questions[2]  # the whole command, not its first 300 characters
    assert (settings.cwd / "one.txt").exists() and not (settings.cwd / "two.txt").exists()
    assert "word299" in (settings.cwd / "words.txt").read_text(encoding="utf-8")
    assert "[Permission denied for 1 tool call(s):" in body and "two.txt" in body


async def test_concurrent_questions_of_one_turn_all_reach_the_host(tmp_path: Path) -> None:
    host = Host("allow", "decline")
    fetches = [("WebFetch", {"url": f"http://127.0.0.1:9/{page}", "prompt": "summarise"}, None) for page in "ab"]
    model = ScriptedModel([tool_calls(*fetches), report_results])  # WebFetch calls of one turn run concurrently
    async with connected(make_settings(tmp_path), model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert len(host.questions) == 2
    assert sorted(q.split("URL:\n")[1].split("\n")[0][-1] for q in host.questions) == ["a", "b"]
    assert body.count("Permission denied: The person denied this call") == 1  # one allowed, one declined


@pytest.mark.parametrize("mode", MODES)
async def test_a_question_nobody_answers_times_out_into_a_denial(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=0.3)
    release = anyio.Event()
    host = Host("allow", hold=release)
    reported = anyio.Event()
    final: list[str] = []

    def report(request: ModelRequest) -> ModelResponse:
        response = report_results(request)
        part = response.parts[0]
        assert isinstance(part, TextPart)
        final.append(part.text)
        reported.set()
        return response

    steps = [tool_call("Bash", {"command": "make first"}), tool_call("Bash", {"command": "make second"}), report]
    results: list[types.CallToolResult] = []
    async with connected(settings, mode=mode, model=ScriptedModel(steps), elicitation_callback=host) as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await client.call_tool("Task", TASK))

            group.start_soon(call)
            with anyio.fail_after(10):
                await reported.wait()  # the run went on without an answer
            release.set()  # the person answers at last
    [body] = final
    first, second = body.split(" || ")
    assert "Nobody answered the permission question within 0.3 s (--ask-timeout)." in first
    # One unanswered question is enough: the next is denied at once rather than waiting again.
    assert "Nobody was asked: an earlier permission question of this task went unanswered" in second
    assert 'add "Bash(make first)" to permissions.allow' in first  # what would allow it next time
    assert len(host.questions) == 1
    [answered] = results  # a late answer is dropped; the call waits on and returns the task's result
    assert "Nobody answered the permission question within 0.3 s" in text_of(answered)


@pytest.mark.parametrize("mode", MODES)
async def test_a_question_that_comes_up_after_handover_is_asked_by_the_next_taskoutput(
    tmp_path: Path, mode: str
) -> None:
    host = Host("allow")
    release = anyio.Event()

    async def slow_then_write(_request: ModelRequest) -> ModelResponse:
        await release.wait()
        return tool_call("Write", {"file_path": "late.txt", "content": "x"})

    settings = make_settings(tmp_path, foreground_deadline=0.2, ask_timeout=30)
    assert settings.cwd is not None
    model = ScriptedModel([slow_then_write, report_results])
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        handed = text_of(await client.call_tool("Task", TASK))
        release.set()
        task_id = handed.split("Task ")[1].split()[0]
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "continues in the background" in handed
    assert len(host.questions) == 1 and "asks to run Write: late.txt" in host.questions[0]
    assert "<status>completed</status>" in body and "OK: File created" in body
    assert (settings.cwd / "late.txt").read_text(encoding="utf-8") == "x"


async def test_2025_an_answer_after_handover_still_reaches_the_task(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, foreground_deadline=0.2)
    assert settings.cwd is not None
    host = Host("allow", delay=0.6)
    model = ScriptedModel([tool_call("Write", {"file_path": "late.txt", "content": "x"}), report_results])
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        handed = text_of(await client.call_tool("Task", TASK))  # returns while the question is still open
        task_id = handed.split("Task ")[1].split()[0]
        body = ""
        with anyio.fail_after(10):
            while "<status>completed</status>" not in body:  # each TaskOutput waits up to the deadline
                body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "continues in the background" in handed and len(host.questions) == 1
    assert "<status>completed</status>" in body and "OK: File created" in body
    assert (settings.cwd / "late.txt").exists()


async def test_2026_an_answer_after_the_deadline_is_delivered_and_the_call_waits_again(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, foreground_deadline=0.2)
    assert settings.cwd is not None
    host = Host("allow", delay=0.6)  # the person takes three deadlines to answer
    model = ScriptedModel([tool_call("Write", {"file_path": "late.txt", "content": "x"}), report_results])
    async with connected(settings, mode="auto", model=model, elicitation_callback=host) as client:
        result = await client.call_tool("Task", TASK)
    assert not result.is_error and "OK: File created" in text_of(result)
    assert text_of(result).startswith('<task_result agent="general-purpose">')
    assert (settings.cwd / "late.txt").exists()


async def test_2026_the_repeated_call_hands_over_when_the_task_runs_on(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, foreground_deadline=0.2)
    release = anyio.Event()

    async def slow(_request: ModelRequest) -> ModelResponse:
        await release.wait()
        return text("finally done")

    host = Host("allow")
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), slow])
    async with connected(settings, mode="auto", model=model, elicitation_callback=host) as client:
        handed = text_of(await client.call_tool("Task", TASK))
        release.set()
        task_id = handed.split("Task ")[1].split()[0]
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert len(host.questions) == 1
    assert "is still running after 0.2 s, so it continues in the background" in handed
    assert "finally done" in body and "<status>completed</status>" in body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("block", [True, False])
async def test_a_background_tasks_question_waits_and_taskoutput_puts_it_before_the_person(
    tmp_path: Path, mode: str, block: bool
) -> None:
    host = Host("allow")
    model = ScriptedModel([tool_call("Bash", {"command": "echo made > made.txt"}), report_results])
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    async with connected(settings, mode=mode, model=model, elicitation_callback=host) as client:
        launched = text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))
        task_id = launched.split("task_id: ")[1].split()[0]
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "block": block, "timeout": 5000}))
        with anyio.fail_after(10):
            while "<status>completed</status>" not in body:
                body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert len(host.questions) == 1 and host.questions[0].startswith(
        "Subagent 'general-purpose' asks to run Bash: echo made > made.txt\n"
    )
    assert "OK: " in body and (settings.cwd / "made.txt").read_text(encoding="utf-8") == "made\n"


@pytest.mark.parametrize("mode", MODES)
async def test_a_dismissed_form_leaves_the_question_open_for_another_place(tmp_path: Path, mode: str) -> None:
    host = Host("cancel")
    model = ScriptedModel([tool_call("Bash", {"command": "make"}), report_results])
    settings = make_settings(tmp_path, ask_timeout=30, foreground_deadline=0.5)
    async with (
        running_app(settings, model=model) as app,
        Client(build_server(app), mode=mode, elicitation_callback=host) as client,
    ):
        handed = text_of(await client.call_tool("Task", TASK))
        task_id = handed.split("Task ")[1].split()[0]
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "block": False}))
        record = app.tasks.get(task_id, principal="local")
        [question] = app.tasks.open_questions(record)
        await app.answers.answer(record, question.id, "deny", by="ann", via="a test")
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "is still running after 0.5 s" in handed and "It is waiting for you: Subagent" in handed
    assert "<status>waiting</status>" in status and "asks to run Bash: make</waiting_for_you>" in status
    assert "you cannot answer for them" in status
    assert len(host.questions) == 2  # a dismissed form is not shown again in its call; the next call shows it again
    assert "Permission denied: The person denied this call (a test)." in body


async def test_2026_cancelling_the_repeated_call_stops_the_task(tmp_path: Path) -> None:
    host = Host("allow")
    arrived, never = anyio.Event(), anyio.Event()

    async def hang(_request: ModelRequest) -> ModelResponse:
        arrived.set()
        await never.wait()
        raise AssertionError("unreachable")

    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), hang])
    async with connected(make_settings(tmp_path), mode="auto", model=model, elicitation_callback=host) as client:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "Task", TASK)
                await arrived.wait()  # the answer was delivered; the repeated call waits on the task
                group.cancel_scope.cancel()  # the host gives up on the repeated call
        task_id = host.questions[0].split("\nTask ")[1].split(".")[0]
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "<status>stopped</status>" in status
