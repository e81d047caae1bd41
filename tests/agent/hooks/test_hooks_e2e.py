"""Hooks as a user meets them through the real server: real scripts block, rewrite, add context, time out, keep an
agent going and stop it, with the JSON Claude Code sends on stdin."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from mcp_subagents.config.settings import Settings
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.processes import wait_until_gone
from tests.support import MODES, connected, last_results, make_settings, text_of, user_message

from .scripts import agent_with_hooks, events, group, handler, recorder, script, settings_with_hooks

pytestmark = pytest.mark.anyio


def user_settings(settings: Settings) -> Path:
    assert settings.user_settings_file is not None
    return settings.user_settings_file


def task(agent: str, prompt: str = "Do it.") -> dict[str, str]:
    return {"description": "hooked work", "prompt": prompt, "subagent_type": agent}


def quote_results(request: ModelRequest) -> ModelResponse:
    """The final answer quotes the last tool results, so tests see what the subagent saw."""
    results = last_results(request)
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


@pytest.mark.parametrize("mode", MODES)
async def test_a_pre_tool_use_hook_that_exits_2_blocks_the_call_and_the_model_reads_why(
    tmp_path: Path, mode: str
) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None and settings.user_agents_dir is not None
    (settings.cwd / "precious").write_text("keep me", encoding="utf-8")
    guard = script(
        tmp_path / "hooks", "no-rm.sh", 'grep -q \'"rm \' && { echo "rm is not allowed here" >&2; exit 2; }\nexit 0'
    )
    agent_with_hooks(settings.user_agents_dir, "guarded", {"PreToolUse": [group(handler(guard), matcher="Bash")]})
    model = ScriptedModel([tool_call("Bash", {"command": "rm -f precious"}), quote_results])
    async with connected(settings, mode=mode, model=model) as client:
        body = text_of(await client.call_tool("Task", task("guarded")))
    assert (settings.cwd / "precious").read_text(encoding="utf-8") == "keep me"
    assert "ERR: Error: A PreToolUse hook blocked this call: rm is not allowed here" in body
    assert "Blocked by a PreToolUse hook: rm is not allowed here" in body  # listed with the run's denials


async def test_settings_hooks_with_an_if_rule_deny_by_json_and_skip_other_commands(tmp_path: Path) -> None:
    log = tmp_path / "guard.log"
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "pushing is for people",
        }
    }
    guard = recorder(tmp_path / "hooks", "guard.sh", log, then=f"echo '{json.dumps(deny)}'")
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    settings_with_hooks(
        user_settings(settings),
        {"PreToolUse": [group(handler(guard, **{"if": "Bash(git push *)"}), matcher="Bash")]},
    )
    model = ScriptedModel(
        [
            tool_call("Bash", {"command": "echo fine"}),
            tool_call("Bash", {"command": "git push origin main"}),
            quote_results,
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert "A PreToolUse hook blocked this call: pushing is for people" in body
    [seen] = events(log)  # `echo fine` did not match the `if` rule: the hook never ran for it
    assert seen["tool_input"] == {"command": "git push origin main"}


async def test_a_hook_rewrites_the_input_and_its_allow_skips_the_question(tmp_path: Path) -> None:
    rewrite = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"file_path": "notes.txt", "content": "rewritten by the hook"},
        }
    }
    hook = script(tmp_path / "hooks", "rewrite.sh", f"cat > /dev/null; echo '{json.dumps(rewrite)}'")
    settings = make_settings(tmp_path)  # default mode: a Write would ask, and this host cannot be asked
    assert settings.cwd is not None and settings.user_agents_dir is not None
    agent_with_hooks(settings.user_agents_dir, "writer", {"PreToolUse": [group(handler(hook), matcher="Write")]})
    model = ScriptedModel([tool_call("Write", {"file_path": "notes.txt", "content": "original"}), quote_results])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("writer")))
    assert "Permission denied" not in body
    assert (settings.cwd / "notes.txt").read_text(encoding="utf-8") == "rewritten by the hook"


async def test_context_from_subagent_start_and_post_tool_use_reaches_the_model(tmp_path: Path) -> None:
    start = {
        "hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "The deploy target is staging."}
    }
    after = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "This file is generated."}}
    settings = make_settings(tmp_path)
    assert settings.cwd is not None and settings.user_agents_dir is not None
    (settings.cwd / "gen.py").write_text("x = 1\n", encoding="utf-8")
    hooks_dir = tmp_path / "hooks"
    settings_with_hooks(
        user_settings(settings),
        {
            "SubagentStart": [
                group(handler(script(hooks_dir, "start.sh", f"echo '{json.dumps(start)}'")), matcher="reader")
            ],
            "PostToolUse": [
                group(handler(script(hooks_dir, "after.sh", f"echo '{json.dumps(after)}'")), matcher="Read")
            ],
        },
    )
    agent_with_hooks(settings.user_agents_dir, "reader", {})
    model = ScriptedModel([tool_call("Read", {"file_path": "gen.py"}), text("read it")])
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", task("reader"))
    first_message = user_message(model.requests[0])
    assert "The deploy target is staging." in "\n".join(first_message.context)
    [result] = last_results(model.requests[1])
    assert (
        "x = 1" in result.content and "<system-reminder>\nThis file is generated.\n</system-reminder>" in result.content
    )


async def test_a_hook_that_times_out_is_stopped_and_the_call_goes_on_with_a_notice(tmp_path: Path) -> None:
    pid_file = tmp_path / "hook.pid"
    slow = script(tmp_path / "hooks", "slow.sh", f"echo $$ > '{pid_file}'; sleep 1000")
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    agent_with_hooks(
        settings.user_agents_dir, "patient", {"PreToolUse": [group(handler(slow, timeout=0.5), matcher="Bash")]}
    )
    model = ScriptedModel([tool_call("Bash", {"command": "echo ran"}), quote_results])
    async with connected(settings, model=model) as client:
        with anyio.fail_after(20):
            body = text_of(await client.call_tool("Task", task("patient")))
    assert "OK: ran" in body
    assert "PreToolUse hook error" in body and "timed out after 0.5 s and was stopped" in body
    await wait_until_gone(int(pid_file.read_text(encoding="utf-8")))


async def test_a_failing_hook_does_not_block_and_the_output_file_says_so(tmp_path: Path) -> None:
    broken = script(tmp_path / "hooks", "broken.sh", "echo 'config missing' >&2; exit 1")
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    agent_with_hooks(settings.user_agents_dir, "fragile", {"PreToolUse": [group(handler(broken))]})
    model = ScriptedModel([tool_call("Bash", {"command": "echo ran"}), quote_results])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("fragile")))
    assert "OK: ran" in body and "exited with 1: config missing" in body
    output = next((settings.state_dir / "tasks").glob("*.output")).read_text(encoding="utf-8")
    assert "PreToolUse hook" in output and "failed: exited with 1: config missing" in output


@pytest.mark.parametrize("mode", MODES)
async def test_subagent_stop_block_keeps_the_agent_going_with_the_reason(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "stop.log"
    keep_going = {"decision": "block", "reason": "Also list the files you read."}
    hook = recorder(
        tmp_path / "hooks",
        "stop.sh",
        log,
        then=f"tail -n 1 '{log}' | grep -q '\"stop_hook_active\": false' && echo '{json.dumps(keep_going)}'; exit 0",
    )
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    agent_with_hooks(settings.user_agents_dir, "thorough", {"Stop": [group(handler(hook))]})
    model = ScriptedModel([text("first answer"), text("first answer, and I read notes.txt")])
    async with connected(settings, mode=mode, model=model) as client:
        body = text_of(await client.call_tool("Task", task("thorough")))
    assert '<task_result agent="thorough">first answer, and I read notes.txt</task_result>' in body
    assert user_message(model.requests[1], -1).content == "Also list the files you read."
    first, second = events(log)
    assert (first["stop_hook_active"], second["stop_hook_active"]) == (False, True)
    assert first["last_assistant_message"] == "first answer"
    assert list(first) == [
        "session_id",
        "transcript_path",
        "cwd",
        "permission_mode",
        "agent_id",
        "agent_type",
        "effort",
        "hook_event_name",
        "stop_hook_active",
        "agent_transcript_path",
        "last_assistant_message",
        "background_tasks",
        "session_crons",
    ]
    assert first["hook_event_name"] == "SubagentStop" and first["agent_type"] == "thorough"
    assert first["effort"] == {"level": "medium"} and first["permission_mode"] == "default"
    assert Path(first["agent_transcript_path"]).is_file() and first["agent_id"] in first["agent_transcript_path"]


async def test_continue_false_stops_the_agent_with_the_hooks_reason(tmp_path: Path) -> None:
    stop = {"continue": False, "stopReason": "the daily budget is spent"}
    hook = script(tmp_path / "hooks", "budget.sh", f"echo '{json.dumps(stop)}'")
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    agent_with_hooks(settings.user_agents_dir, "spender", {"PostToolUse": [group(handler(hook), matcher="Bash")]})
    model = ScriptedModel(
        [tool_call("Bash", {"command": "echo one"}, say="Working."), tool_call("Bash", {"command": "echo two"})]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("spender")))
    assert "[A hook stopped the agent: the daily budget is spent]" in body
    assert len(model.requests) == 1  # the model was not asked again


async def test_a_permission_request_hook_answers_for_the_person(tmp_path: Path) -> None:
    allow = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "no network from agents"},
        }
    }
    hooks_dir = tmp_path / "hooks"
    settings = make_settings(tmp_path)  # default mode: Write and WebFetch would ask; nobody can be asked here
    assert settings.cwd is not None
    settings_with_hooks(
        user_settings(settings),
        {
            "PermissionRequest": [
                group(handler(script(hooks_dir, "allow.sh", f"echo '{json.dumps(allow)}'")), matcher="Write"),
                group(handler(script(hooks_dir, "deny.sh", f"echo '{json.dumps(deny)}'")), matcher="WebFetch"),
            ]
        },
    )
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": "ok.txt", "content": "written"}),
            tool_call("WebFetch", {"url": "https://example.com", "prompt": "read"}),
            quote_results,
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("general-purpose")))
    assert (settings.cwd / "ok.txt").read_text(encoding="utf-8") == "written"
    assert "A PermissionRequest hook denied this call: no network from agents" in body


async def test_post_tool_use_failure_gets_the_error_and_events_come_in_claude_codes_order(tmp_path: Path) -> None:
    log = tmp_path / "events.log"
    hooks_dir = tmp_path / "hooks"
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    settings_with_hooks(
        user_settings(settings),
        {"SubagentStop": [group(handler(recorder(hooks_dir, "settings-stop.sh", log)))]},
    )
    every = group(handler(recorder(hooks_dir, "agent.sh", log)))
    agent_with_hooks(
        settings.user_agents_dir,
        "audited",
        {
            "SubagentStart": [every],
            "PreToolUse": [every],
            "PostToolUse": [every],
            "PostToolUseFailure": [every],
            "Stop": [every],
        },
    )
    model = ScriptedModel(
        [tool_call("Bash", {"command": "echo ok"}), tool_call("Bash", {"command": "exit 3"}), text("done")]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", task("audited"))
    seen = events(log)
    names = [event["hook_event_name"] for event in seen]
    assert names[:5] == ["SubagentStart", "PreToolUse", "PostToolUse", "PreToolUse", "PostToolUseFailure"]
    assert sorted(names[5:]) == ["SubagentStop", "SubagentStop"]  # the agent's Stop and the settings' one
    failure = seen[4]
    assert failure["tool_input"] == {"command": "exit 3"} and "Exit code 3" in failure["error"]
    assert failure["is_interrupt"] is False and isinstance(failure["duration_ms"], int)
    post = seen[2]
    assert post["tool_use_id"] == seen[1]["tool_use_id"]
    # Claude Code's structured result, not the text the model read (its shape: claude_code_tool_responses.json).
    bash = {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
    assert post["tool_response"] == bash


async def test_post_tool_use_gets_read_and_writes_results_in_claude_codes_shape(tmp_path: Path) -> None:
    """A hook that parses `tool_response` as Claude Code gives it (`.file.content` for Read) works unchanged."""
    log = tmp_path / "events.log"
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None
    notes = settings.cwd / "notes.txt"
    notes.write_text("alpha\nbeta\n", encoding="utf-8")
    settings_with_hooks(
        user_settings(settings), {"PostToolUse": [group(handler(recorder(tmp_path / "hooks", "post.sh", log)))]}
    )
    model = ScriptedModel(
        [
            tool_call("Read", {"file_path": str(notes)}),
            tool_call("Write", {"file_path": str(notes), "content": "alpha\ngamma\n"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        await client.call_tool("Task", task("general-purpose"))
    read, write = (event["tool_response"] for event in events(log))
    file = {"filePath": str(notes), "content": "alpha\nbeta\n", "numLines": 3, "startLine": 1, "totalLines": 3}
    assert read == {"type": "text", "file": file}
    assert write["type"] == "update" and write["originalFile"] == "alpha\nbeta\n"
    hunk = {"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2, "lines": [" alpha", "-beta", "+gamma"]}
    assert write["structuredPatch"] == [hunk]


async def test_hooks_get_the_project_dir_and_never_the_servers_keys(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    hook = script(tmp_path / "hooks", "env.sh", f"echo \"$CLAUDE_PROJECT_DIR ${{ANTHROPIC_API_KEY:-unset}}\" > '{out}'")
    settings = make_settings(tmp_path)
    assert settings.user_agents_dir is not None
    agent_with_hooks(settings.user_agents_dir, "plain", {"SubagentStart": [group(handler(hook))]})
    environ = {"ANTHROPIC_API_KEY": "sk-ant-secret-value", "PATH": os.environ["PATH"]}
    async with connected(settings, model=ScriptedModel([text("hi")]), environ=environ) as client:
        await client.call_tool("Task", task("plain"))
    assert out.read_text(encoding="utf-8").split() == [str(settings.cwd), "unset"]
