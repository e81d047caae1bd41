"""The trust question through a real MCP client, in both protocol eras: a task about to run in a project nobody
trusted, whose own settings bring a hook and an allow rule, asks the person once whether to trust the folder, names
what would run, and goes on with the answer; the answer is remembered in the state directory (across a restart)
and never asked again; Claude Code's own record makes the question unnecessary; a question nobody answers leaves
the folder untrusted for that task only."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.config.settings import Settings
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import ScriptedModel, tool_call
from tests.mcp.test_asking import TASK, Host, report_results
from tests.support import MODES, connected, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

RULED = "touch ruled.txt"
"""A command that writes, so it asks unless an allow rule names it: the project's own rule does."""


def untrusted_project(settings: Settings, log: Path) -> str:
    """The project's `.claude/settings.json`: a SubagentStart hook that writes to `log`, and an allow rule for
    `RULED`. Returns the hook's command."""
    assert settings.cwd is not None
    command = f"echo hooked >> {log}"
    hooks = {"SubagentStart": [{"hooks": [{"type": "command", "command": command}]}]}
    (settings.cwd / ".claude").mkdir(exist_ok=True)
    (settings.cwd / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": hooks, "permissions": {"allow": [f"Bash({RULED})"]}}), encoding="utf-8"
    )
    return command


def writes_ruled(tasks: int = 1) -> ScriptedModel:
    """Each task runs `RULED`, then reports what it saw."""
    return ScriptedModel([tool_call("Bash", {"command": RULED}), report_results] * tasks)


def remembered(settings: Settings) -> dict[str, object]:
    path = settings.state_dir / "trust.json"
    if not path.exists():
        return {}
    folders = json.loads(path.read_text(encoding="utf-8"))["folders"]
    assert isinstance(folders, dict)
    return folders  # pyright: ignore[reportUnknownVariableType]


def hook_runs(log: Path) -> int:
    return log.read_text(encoding="utf-8").count("hooked") if log.exists() else 0


@pytest.mark.parametrize("mode", MODES)
async def test_trusting_the_folder_runs_its_hook_and_rule_at_once_and_is_never_asked_again(
    tmp_path: Path, mode: str
) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    log = tmp_path / "hook.log"
    command = untrusted_project(settings, log)
    host = Host("allow")
    async with connected(settings, mode=mode, model=writes_ruled(2), elicitation_callback=host) as client:
        first = text_of(await client.call_tool("Task", TASK))
        (settings.cwd / "ruled.txt").unlink()
        second = text_of(await client.call_tool("Task", TASK))
    [question] = host.questions  # one question for both tasks, and none about the command the rule allows
    headline = question.split("\n")[0]
    assert headline == (
        f"Trust the folder {settings.cwd}? Its files would give subagent 'general-purpose' 1 hook command and 1 "
        "allow rule"
    )
    assert f"- {command}   (SubagentStart, {settings.cwd}/.claude/settings.json)" in question
    assert f"- Bash({RULED})   ({settings.cwd}/.claude/settings.json)" in question
    for body in (first, second):
        assert "OK: (Command completed with no output)" in body and "Permission denied" not in body
    assert hook_runs(log) == 2  # the very task that asked ran the hook
    assert (settings.cwd / "ruled.txt").exists()
    [(folder, answer)] = remembered(settings).items()
    assert folder == str(settings.cwd) and isinstance(answer, dict)
    assert answer["trusted"] is True and answer["via"] == "the host's permission form"

    again = Host("decline")
    async with connected(settings, mode=mode, model=writes_ruled(), elicitation_callback=again) as client:
        restarted = text_of(await client.call_tool("Task", TASK))  # a new server on the same state directory
    assert again.questions == [] and "OK: (Command completed" in restarted and hook_runs(log) == 3


@pytest.mark.parametrize("mode", MODES)
async def test_not_trusting_keeps_the_hook_and_rule_off_and_says_why_the_rule_did_not_count(
    tmp_path: Path, mode: str
) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    host = Host("decline")
    async with connected(settings, mode=mode, model=writes_ruled(2), elicitation_callback=host) as client:
        first = text_of(await client.call_tool("Task", TASK))
        second = text_of(await client.call_tool("Task", TASK))
    trust, asked, asked_again = host.questions  # the trust question once, then the command in each task
    assert trust.startswith("Trust the folder ")
    assert asked.startswith(f"Subagent 'general-purpose' asks to run Bash: {RULED}\n")
    assert asked_again.split("\n")[0] == asked.split("\n")[0]
    settings_file = f"{settings.cwd}/.claude/settings.json"
    why = f'"Bash({RULED})" in permissions.allow of {settings_file} would allow this call but does not count'
    for text in (asked, first, second):
        assert why in text, text
        assert f"because the project {settings.cwd} is not trusted (you chose not to trust it on " in text
        assert "accept the trust dialog" in text and "hasTrustDialogAccepted: true" in text
        assert f"--trust-project {settings.cwd}" in text
    assert "Permission denied: The person denied this call" in first
    assert hook_runs(log) == 0 and not (settings.cwd / "ruled.txt").exists()
    answer = remembered(settings)[str(settings.cwd)]
    assert isinstance(answer, dict) and answer["trusted"] is False and answer["via"] == "the host's permission form"


@pytest.mark.parametrize("mode", MODES)
async def test_a_project_claude_code_trusted_is_never_asked_about(tmp_path: Path, mode: str) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None and settings.claude_config_file is not None
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    settings.claude_config_file.parent.mkdir(parents=True, exist_ok=True)
    record = {"projects": {str(settings.cwd): {"hasTrustDialogAccepted": True}}}
    settings.claude_config_file.write_text(json.dumps(record), encoding="utf-8")
    before = settings.claude_config_file.read_text(encoding="utf-8")
    host = Host("decline")
    async with connected(settings, mode=mode, model=writes_ruled(), elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert host.questions == [] and "OK: (Command completed" in body and hook_runs(log) == 1
    assert remembered(settings) == {}  # nothing of ours written, and Claude Code's record left as it was
    assert settings.claude_config_file.read_text(encoding="utf-8") == before


async def test_a_trust_question_nobody_answers_leaves_the_folder_untrusted_for_that_task_only(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=0.3)
    assert settings.cwd is not None
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    release = anyio.Event()
    host = Host("allow", hold=release)  # the form is shown, and the person does not answer in time
    async with connected(settings, mode="legacy", model=writes_ruled(), elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
        release.set()
    assert len(host.questions) == 1 and host.questions[0].startswith("Trust the folder ")
    # Nobody is there: the command's own question is not asked either, and the project's rule did not count.
    assert "Nobody was asked: an earlier permission question of this task went unanswered" in body
    assert "would allow this call but does not count" in body
    assert hook_runs(log) == 0 and remembered(settings) == {}

    later = Host("allow")
    async with connected(settings, mode="legacy", model=writes_ruled(), elicitation_callback=later) as client:
        await client.call_tool("Task", TASK)
    assert len(later.questions) == 1 and later.questions[0].startswith("Trust the folder ")  # asked again
    assert hook_runs(log) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_background_task_waits_with_the_trust_question_until_someone_answers_elsewhere(
    tmp_path: Path, mode: str
) -> None:
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    async with (
        running_app(settings, model=writes_ruled()) as app,
        Client(build_server(app), mode=mode) as client,  # a host without forms (Claude Desktop, say)
    ):
        launched = text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))
        task_id = launched.split("task_id: ")[1].split()[0]
        record = app.tasks.get(task_id, principal="local")
        with anyio.fail_after(10):
            question = await app.tasks.root(record).resources.questions.wait_for_new()
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "block": False}))
        receipt = await app.answers.answer(record, question.id, "always", by="ann", via="the dashboard")
        body = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 5000}))
    assert record.state == "completed" and receipt.answer.allowed
    assert "<status>waiting</status>" in status
    assert f'<waiting_for_you task_id="{task_id}"' in status and f"Trust the folder {settings.cwd}?" in status
    assert "OK: (Command completed" in body and hook_runs(log) == 1
    answer = remembered(settings)[str(settings.cwd)]
    assert isinstance(answer, dict) and answer["trusted"] is True and answer["by"] == "ann"


async def test_tasks_launched_together_in_one_folder_share_one_trust_question(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    release = anyio.Event()
    host = Host("allow", hold=release)
    model = ScriptedModel([report_results] * 2)
    async with connected(settings, mode="legacy", model=model, elicitation_callback=host) as client:
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(client.call_tool, "Task", TASK)
            with anyio.fail_after(10):
                await host.asked.wait()
            release.set()
    assert len(host.questions) == 1 and hook_runs(log) == 2  # one answer, and both tasks got the folder's hook


async def test_a_server_that_never_asks_does_not_ask_this_either(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="dontAsk")
    log = tmp_path / "hook.log"
    untrusted_project(settings, log)
    host = Host("allow")
    async with connected(settings, mode="legacy", model=writes_ruled(), elicitation_callback=host) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert host.questions == [] and hook_runs(log) == 0 and remembered(settings) == {}
    assert "dontAsk mode denies" in body and "would allow this call but does not count" in body
