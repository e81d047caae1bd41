"""Permissions as a user meets them: modes, settings rules, agent narrowing, and asking through elicitation."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import connected, last_results, make_settings, text_of, write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "change things", "prompt": "Do it.", "subagent_type": "general-purpose"}


def report_results(request: ModelRequest) -> ModelResponse:
    """The final answer quotes every tool result, so tests see what the subagent saw."""
    results = last_results(request)
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


class Host:
    """An elicitation callback that answers as told and records what it was asked."""

    def __init__(self, *, allow: bool | None) -> None:
        self.allow = allow
        self.questions: list[str] = []

    async def __call__(self, _context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        if self.allow is None:
            return types.ElicitResult(action="cancel")
        if not self.allow:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"allow": True})


def settings_with_rules(tmp_path: Path, **permissions: list[str]) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"permissions": permissions}), encoding="utf-8")
    return path


async def test_default_mode_without_a_way_to_ask_denies_and_says_how_to_allow(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("Bash", {"command": "git push origin main"}), report_results])
    async with connected(make_settings(tmp_path), model=model) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "ERR: Error: Permission denied" in body
    assert "[Permission denied for 1 tool call(s):" in body
    assert 'add "Bash(git push origin main)" to permissions.allow' in body
    assert 'to allow every call like it, add "Bash(git push *)" instead' in body


async def test_the_user_allows_a_call_through_elicitation(tmp_path: Path) -> None:
    host = Host(allow=True)
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    model = ScriptedModel([tool_call("Write", {"file_path": "new.txt", "content": "hello"}), report_results])
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "OK: File created" in body and "Permission denied" not in body
    assert (settings.cwd / "new.txt").read_text(encoding="utf-8") == "hello"
    [question] = host.questions
    assert "Subagent 'general-purpose' asks to run Write" in question and "new.txt" in question


@pytest.mark.parametrize("answer", [False, None])
async def test_a_declined_or_dismissed_question_denies(tmp_path: Path, answer: bool | None) -> None:
    host = Host(allow=answer)
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    model = ScriptedModel([tool_call("Write", {"file_path": "new.txt", "content": "x"}), report_results])
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "Permission denied" in body and not (settings.cwd / "new.txt").exists()
    assert len(host.questions) == 1


async def test_a_host_without_elicitation_leaves_the_question_waiting_until_the_ask_timeout(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("Write", {"file_path": "x.txt", "content": "x"}), report_results])
    async with connected(make_settings(tmp_path), mode="auto", model=model) as client:
        body = text_of(await client.call_tool("Task", TASK))
    # Nobody answered from another place (the App view, the dashboard, `tasks answer`) within the test's timeout.
    assert "Nobody answered the permission question within 1 s (--ask-timeout)" in body
    assert 'add "Edit(./x.txt)" to permissions.allow' in body


async def test_a_background_task_asks_through_the_hosts_next_taskoutput(tmp_path: Path) -> None:
    host = Host(allow=True)
    model = ScriptedModel([tool_call("Bash", {"command": "touch x"}), report_results])
    settings = make_settings(tmp_path, ask_timeout=30)
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        launched = text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))
        task_id = launched.split("task_id: ")[1].split()[0]
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert "Permission denied" not in body and "<status>completed</status>" in body and len(host.questions) == 1


async def test_deny_beats_ask_beats_allow(tmp_path: Path) -> None:
    settings_file = settings_with_rules(tmp_path, allow=["Bash"], ask=["Bash(git push *)"], deny=["Bash(rm *)"])
    host = Host(allow=False)
    model = ScriptedModel(
        [
            tool_call("Bash", {"command": "echo fine"}),
            tool_call("Bash", {"command": "git push"}),
            tool_call("Bash", {"command": "rm -rf build"}),
            text("done"),
        ]
    )
    async with connected(
        make_settings(tmp_path, settings_file=settings_file), mode="legacy", model=model, elicitation_callback=host
    ) as client:
        body = text_of(await client.call_tool("Task", TASK))
    results = [last_results(req)[0] for req in model.requests[1:]]
    assert not results[0].is_error and "fine" in results[0].content
    assert results[1].is_error and "denied this call" in results[1].content  # asked, because an ask rule matched
    assert results[2].is_error and "Bash(rm *)" in results[2].content  # denied without asking
    assert len(host.questions) == 1
    assert "[Permission denied for 2 tool call(s):" in body


async def test_accept_edits_allows_writes_inside_the_working_directory_only(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="acceptEdits")
    assert settings.cwd is not None
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "inside.txt", "content": "x"}),
            tool_call("Bash", {"command": "make"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", TASK)
    first, second = (last_results(req)[0] for req in model.requests[1:])
    assert not first.is_error and (settings.cwd / "inside.txt").exists()
    assert second.is_error and "Permission denied" in second.content


async def test_plan_mode_is_read_only(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="plan")
    model = ScriptedModel([tool_call("Write", {"file_path": "x.txt", "content": "x"}), report_results])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "plan mode is read-only" in body


async def test_an_accept_edits_agent_writes_under_a_default_mode_server(tmp_path: Path) -> None:
    # Claude Code 2.1.328 (capture accept_edits.cc.json): the editor's Write goes through in a default session. A
    # project's agent file widens the mode only once the project is trusted.
    settings = make_settings(tmp_path, trust_projects=(tmp_path / "work",))
    assert settings.cwd is not None
    write_agent(settings.cwd / ".claude" / "agents", "editor", extra="permissionMode: acceptEdits\n")
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "out.txt", "content": "x"}),
            tool_call("Bash", {"command": "make"}),
            text("ok"),
        ]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", {**TASK, "subagent_type": "editor"})
    written, ran = (last_results(req)[0] for req in model.requests[1:])
    assert not written.is_error and (settings.cwd / "out.txt").read_text(encoding="utf-8") == "x"
    assert ran.is_error and "needs approval in acceptEdits mode" in ran.content  # commands still ask


async def test_an_untrusted_projects_agent_file_narrows_the_mode_but_never_widens_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(tmp_path, permission_mode="dontAsk")
    assert settings.cwd is not None
    agents = settings.cwd / ".claude" / "agents"
    write_agent(agents, "editor", extra="permissionMode: acceptEdits\n")
    write_agent(agents, "asker", extra="permissionMode: default\n")
    write_agent(agents, "planner", extra="permissionMode: plan\n")
    host = Host(allow=True)
    answers: dict[str, str] = {}
    for agent in ("editor", "asker", "planner"):
        model = ScriptedModel([tool_call("Write", {"file_path": f"{agent}.txt", "content": "x"}), report_results])
        async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
            answers[agent] = text_of(await client.call_tool("Task", {**TASK, "subagent_type": agent}))
    assert list(settings.cwd.glob("*.txt")) == [] and host.questions == []  # dontAsk stands: nobody is asked
    assert "plan mode is read-only" in answers["planner"]  # narrowing still applies
    assert "permissionMode: acceptEdits is ignored and it runs in dontAsk mode" in caplog.text
    assert "permissionMode: default is ignored" in caplog.text and "--trust-project" in caplog.text


async def test_an_agent_file_never_widens_past_its_rule(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None
    agents = settings.cwd / ".claude" / "agents"
    write_agent(agents, "planner", extra="permissionMode: plan\n")
    model = ScriptedModel([tool_call("Write", {"file_path": "x.txt", "content": "x"}), report_results])
    async with connected(settings, model=model) as client:
        kept = text_of(await client.call_tool("Task", {**TASK, "subagent_type": "planner"}))
    assert "OK: File created" in kept  # as in Claude Code, a bypassPermissions server keeps its mode

    write_agent(agents, "yolo", extra="permissionMode: bypassPermissions\n")
    for server_mode in ("default", "dontAsk"):
        model = ScriptedModel([tool_call("Bash", {"command": "make"}), report_results])
        async with connected(make_settings(tmp_path, permission_mode=server_mode), model=model) as client:
            widened = text_of(await client.call_tool("Task", {**TASK, "subagent_type": "yolo"}))
        assert "Permission denied" in widened, server_mode


async def test_dont_ask_mode_denies_without_asking(tmp_path: Path) -> None:
    host = Host(allow=True)
    model = ScriptedModel([tool_call("Bash", {"command": "make"}), report_results])
    async with connected(
        make_settings(tmp_path, permission_mode="dontAsk"), mode="legacy", model=model, elicitation_callback=host
    ) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "Permission denied" in body and host.questions == []


async def test_an_agents_permission_map_narrows_its_tools(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None
    (settings.cwd / "a.txt").write_text("alpha\n", encoding="utf-8")
    (settings.cwd / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    write_agent(
        settings.cwd / ".claude" / "agents",
        "careful",
        extra='permission:\n  "*": deny\n  Grep: allow\n  Read:\n    "*": allow\n    "*.env": deny\n',
    )
    model = ScriptedModel(
        [
            tool_call("Read", {"file_path": "a.txt"}),
            tool_call("Read", {"file_path": ".env"}),
            tool_call("Grep", {"pattern": "alpha"}),
            tool_call("Bash", {"command": "ls"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", {**TASK, "subagent_type": "careful"})
    results = [last_results(req)[0] for req in model.requests[1:]]
    assert [r.is_error for r in results] == [False, True, False, True]
    assert "alpha" in results[0].content and "TOKEN" not in results[1].content


async def test_a_question_after_handover_is_asked_through_taskoutput(tmp_path: Path) -> None:
    host = Host(allow=True)
    release = anyio.Event()

    async def slow_then_write(_request: ModelRequest) -> ModelResponse:
        await release.wait()
        return tool_call("Write", {"file_path": "late.txt", "content": "x"})

    model = ScriptedModel([slow_then_write, report_results])
    settings = make_settings(tmp_path, foreground_deadline=0.2, ask_timeout=30)
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        handed = text_of(await client.call_tool("Task", TASK))
        release.set()
        task_id = handed.split("Task ")[1].split()[0]
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert "Permission denied" not in body and "OK: File created" in body and len(host.questions) == 1


async def test_the_servers_own_configuration_is_not_writable_even_in_bypass_mode(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None and settings.user_settings_file is not None
    user_settings = settings.user_settings_file
    model = ScriptedModel(
        [
            tool_call(
                "Write", {"file_path": ".claude/settings.json", "content": '{"permissions": {"allow": ["Bash"]}}'}
            ),
            tool_call("Write", {"file_path": str(user_settings), "content": "{}"}),
            tool_call("Bash", {"command": "mkdir -p .git/hooks && echo 'touch pwned' > .git/hooks/pre-commit"}),
            tool_call("Write", {"file_path": "notes.txt", "content": "fine"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", TASK)
    results = [last_results(req)[0] for req in model.requests[1:]]
    assert [r.is_error for r in results] == [True, True, True, False]
    assert not (settings.cwd / ".claude").exists() and not user_settings.exists()
    assert not (settings.cwd / ".git" / "hooks" / "pre-commit").exists()


async def test_read_only_commands_run_and_writing_ones_ask_as_in_claude_code(tmp_path: Path) -> None:
    # The commands of the bash_default capture: Claude Code 2.1.328 ran the first four and asked for the last two.
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    (settings.cwd / "notes.txt").write_text("the secret is here\n", encoding="utf-8")
    commands = ["ls", "cat notes.txt", "grep -n secret notes.txt", "git status --short", "echo hi > made.txt",
                "touch made2.txt"]  # fmt: skip
    model = ScriptedModel([*(tool_call("Bash", {"command": command}) for command in commands), text("done")])
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", TASK)
    results = [last_results(req)[0] for req in model.requests[1:]]
    assert [r.is_error and "Permission denied" in r.content for r in results] == [False] * 4 + [True] * 2
    assert "1:the secret is here" in results[2].content
    assert not (settings.cwd / "made.txt").exists() and not (settings.cwd / "made2.txt").exists()


async def test_tasks_of_one_server_follow_a_settings_change_and_their_own_agent(tmp_path: Path) -> None:
    # Tasks reuse one permission policy while nothing it was built from changed: a rule written between two Tasks
    # and a different agent's mode must still take effect.
    settings_file = settings_with_rules(tmp_path, allow=["Write"])
    settings = make_settings(tmp_path, settings_file=settings_file, trust_projects=(tmp_path / "work",))
    assert settings.cwd is not None
    write_agent(settings.cwd / ".claude" / "agents", "editor", extra="permissionMode: acceptEdits\n")
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "a", "content": "x"}),
            text("ok"),
            tool_call("Write", {"file_path": "b", "content": "x"}),
            text("ok"),
            tool_call("Write", {"file_path": "c", "content": "x"}),  # after the change: denied
            text("ok"),
            tool_call("Write", {"file_path": "d", "content": "x"}),  # the editor: allowed by its mode
            text("ok"),
        ]
    )
    async with connected(settings, model=model) as client:
        for _ in range(2):
            await client.call_tool("Task", TASK)
        settings_file.write_text(json.dumps({"permissions": {"ask": ["Write(./c)"]}}), encoding="utf-8")
        await client.call_tool("Task", TASK)
        await client.call_tool("Task", {**TASK, "subagent_type": "editor"})
    results = [last_results(req)[0] for req in model.requests[1::2]]
    assert [result.is_error for result in results] == [False, False, True, False]
    assert "Permission denied" in results[2].content
    assert sorted(path.name for path in settings.cwd.iterdir() if path.is_file()) == ["a", "b", "d"]
