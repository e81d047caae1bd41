"""A real Claude Code 2.1.328 (`claude -p`) runs our server over stdio and asks its person through our questions,
for a task it waits on and for one in the background (through its next TaskOutput call).

Both Claude Code's main model and our subagents talk to the fake Messages API. Claude Code speaks the 2026-07-28
era: roots and permission questions reach it as `InputRequiredResult` round trips of its `Task` call, and in `-p`
mode its `Elicitation` hook (in the scratch `~/.claude/settings.json`) answers for the person.
Runs when the `claude` binary is found: $MCP_SUBAGENTS_CLAUDE, or .ci-node/ where .ci/run installs it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn
from tests.support import CHECKOUT, json_object, server_environment

pytestmark = pytest.mark.anyio

CLAUDE = Path(os.environ.get("MCP_SUBAGENTS_CLAUDE") or CHECKOUT / ".ci-node" / "node_modules" / ".bin" / "claude")
KEY = "sk-test-key-12345"


def claude_environment(home: Path, fake: FakeLLM, **extra: str) -> dict[str, str]:
    """What `claude -p` runs with: a scratch HOME, the fake as its provider, telemetry, updates and other traffic
    off, and `extra`."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **extra,
    }


HOOK = """\
import json, sys
question = json.load(sys.stdin)
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps(question) + "\\n")
allow = "Command:" not in question["message"]  # the person allows file writes and declines commands
answer = {"action": "accept", "content": {"allow": True}} if allow else {"action": "decline"}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", **answer}}))
"""


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]["content"]
    return [block for block in last if json_object(block) and block.get("type") == "tool_result"]


def _first_prompt(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def _result_texts(body: dict[str, Any]) -> list[str]:
    """The text of every tool result the main model received."""
    texts: list[str] = []
    for message in body["messages"]:
        for result in _tool_results({"messages": [message]}) if message["role"] == "user" else []:
            content = result.get("content")
            blocks = cast(list[dict[str, Any]], content) if isinstance(content, list) else [{"text": str(content)}]
            texts.append("".join(block.get("text", "") for block in blocks))
    return texts


def script(body: dict[str, Any]) -> Turn:
    """Claude Code's main model delegates twice; our subagent writes a file, or runs a command."""
    tools = {tool.get("name") for tool in body.get("tools", [])}
    done = len([m for m in body.get("messages", []) if m["role"] == "user" and _tool_results({"messages": [m]})])
    if "mcp__subagents__Task" in tools:  # Claude Code's main loop (never deferred: the tool is always loaded)
        prompts = ["Write cc.txt.", "Run touch."]
        if done < len(prompts):
            task = {"description": "delegate", "prompt": prompts[done], "subagent_type": "general-purpose"}
            return turn(tool_use("mcp__subagents__Task", task))
        return turn(text("MAIN:\n" + "\n---\n".join(_result_texts(body))))
    if "TodoWrite" in tools:  # our subagent
        if _tool_results(body):
            return turn(text("SUBAGENT: " + json.dumps(_tool_results(body)[0]["content"])))
        if "Write" in _first_prompt(body):
            return turn(tool_use("Write", {"file_path": "cc.txt", "content": "from claude code"}))
        return turn(tool_use("Bash", {"command": "touch declined.txt"}))
    return turn(text("ok"))  # anything else Claude Code asks on its own


NEEDS_CLAUDE = pytest.mark.skipif(
    not CLAUDE.is_file(),
    reason=f"Claude Code is not installed at {CLAUDE}: .ci/run installs it; or set MCP_SUBAGENTS_CLAUDE",
)


@dataclass(frozen=True, slots=True)
class ClaudeRun:
    result: str
    """What Claude Code's main model said last (its `-p` result)."""
    log: str
    """Claude Code's debug log."""
    questions: list[dict[str, Any]]
    """What its Elicitation hook was asked, in order."""


async def run_claude(tmp_path: Path, fake: FakeLLM, *, allowed_tools: str) -> tuple[ClaudeRun, Path]:
    """`claude -p` in a trusted scratch project with our server over stdio (sandbox as it comes by default); the
    Elicitation hook answers for the person. The project folder is returned beside the run."""
    home, project, state = tmp_path / "home", tmp_path / "project", tmp_path / "state"
    for folder in (home / ".claude", project, state):
        folder.mkdir(parents=True)
    hook, asked = tmp_path / "hook.py", tmp_path / "asked.jsonl"
    hook.write_text(HOOK, encoding="utf-8")
    command = f"{sys.executable} {hook} {asked}"
    settings = {"hooks": {"Elicitation": [{"hooks": [{"type": "command", "command": command}]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (home / ".claude.json").write_text(
        json.dumps({"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}),
        encoding="utf-8",
    )
    # The sandbox as it comes by default: a sandboxed command that writes still asks, as in Claude Code.
    server_env = server_environment(home, fake=fake, key=KEY, state=state, sandbox="auto")
    server = {"type": "stdio", "command": sys.executable, "args": ["-m", "mcp_subagents", "serve"], "env": server_env}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"subagents": server}}), encoding="utf-8")
    debug = tmp_path / "debug.log"
    arguments = ["-p", "Delegate the work.", "--mcp-config", str(config), "--strict-mcp-config"]
    arguments += ["--allowedTools", allowed_tools, "--output-format", "json", "--debug-file", str(debug)]
    with anyio.fail_after(240):
        run = await anyio.run_process(
            [str(CLAUDE), *arguments],
            cwd=project,
            check=False,
            env=claude_environment(home, fake),
        )
    output = run.stdout.decode(errors="replace")
    assert run.returncode == 0, f"{output}\n{run.stderr.decode(errors='replace')}"
    lines = asked.read_text(encoding="utf-8").splitlines() if asked.exists() else []
    questions = [json.loads(line) for line in lines]
    return ClaudeRun(json.loads(output)["result"], debug.read_text(encoding="utf-8"), questions), project


@NEEDS_CLAUDE
async def test_claude_code_asks_its_person_through_our_round_trips(tmp_path: Path, fake: FakeLLM) -> None:
    fake.default = script
    run, project = await run_claude(tmp_path, fake, allowed_tools="mcp__subagents__Task")
    assert '"negotiatedProtocolVersion":"2026-07-28"' in run.log  # the era without server-initiated requests

    # The host's roots arrived (the project became the working directory), once for the connection.
    assert (project / "cc.txt").read_text(encoding="utf-8") == "from claude code"
    assert run.log.count("Received ListRoots request from server") == 1
    # Both questions reached the person (here the hook) with the tool, the agent and the whole path or command.
    questions = run.questions
    assert [q["mcp_server_name"] for q in questions] == ["subagents", "subagents"]
    assert "Subagent 'general-purpose' asks to run Write" in questions[0]["message"]
    assert "File:\ncc.txt" in questions[0]["message"] and "Command:\ntouch declined.txt" in questions[1]["message"]
    # Claude Code's model got both task results: the allowed write, and the declined command with its reason.
    first, second = run.result.removeprefix("MAIN:\n").split("\n---\n")
    assert first.startswith('<task_result agent="general-purpose">SUBAGENT: "File created successfully')
    assert second.startswith('<task_result agent="general-purpose">SUBAGENT: "Error: Permission denied: ')
    assert "The person denied this call" in second and not (project / "declined.txt").exists()


def background_script(body: dict[str, Any]) -> Turn:
    """Claude Code's main model launches a task in the background and polls TaskOutput (found through ToolSearch
    when Claude Code defers it) until the task completes; our subagent writes a file, which asks."""
    tools = {tool.get("name") for tool in body.get("tools", [])}
    if "mcp__subagents__Task" in tools:
        texts = _result_texts(body)
        if not texts:
            task = {"description": "in the background", "prompt": "Write bg.txt.", "subagent_type": "general-purpose"}
            return turn(tool_use("mcp__subagents__Task", {**task, "run_in_background": True}))
        if "<status>completed</status>" in texts[-1] or len(texts) > 8:
            return turn(text("MAIN:\n" + texts[-1]))
        task_id = texts[0].split("task_id: ")[1].split()[0]
        if "mcp__subagents__TaskOutput" not in tools and len(texts) == 1:
            return turn(tool_use("ToolSearch", {"query": "select:mcp__subagents__TaskOutput", "max_results": 1}))
        return turn(tool_use("mcp__subagents__TaskOutput", {"task_id": task_id, "block": True, "timeout": 30000}))
    if "TodoWrite" in tools:  # our subagent
        if _tool_results(body):
            return turn(text("SUBAGENT: " + json.dumps(_tool_results(body)[0]["content"])))
        return turn(tool_use("Write", {"file_path": "bg.txt", "content": "written in the background"}))
    return turn(text("ok"))


@NEEDS_CLAUDE
async def test_claude_code_answers_a_background_tasks_question_through_taskoutput(
    tmp_path: Path, fake: FakeLLM
) -> None:
    fake.default = background_script
    allowed = "mcp__subagents__Task,mcp__subagents__TaskOutput"
    run, project = await run_claude(tmp_path, fake, allowed_tools=allowed)
    # Launching returned at once; the question waited with the task until Claude Code's TaskOutput call, whose
    # round trip put it before the person (the hook), who allowed it; the task then completed.
    assert len(run.questions) == 1 and "Subagent 'general-purpose' asks to run Write" in run.questions[0]["message"]
    assert (project / "bg.txt").read_text(encoding="utf-8") == "written in the background"
    assert "<status>completed</status>" in run.result and "SUBAGENT: " in run.result
    assert "File created successfully" in run.result


DUMP_ENVIRONMENT = """\
import json, os, sys
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(dict(os.environ), out)
"""


@NEEDS_CLAUDE
async def test_claude_code_passes_its_whole_environment_to_a_stdio_server_under_the_entrys_env(
    tmp_path: Path, fake: FakeLLM
) -> None:
    """What the README's host configuration says: the API key, base URL and the rest of Claude Code's environment
    (its settings' `env` included) reach the server; the entry's `env` wins over them."""
    fake.default = lambda _body: turn(text("ok"))
    home, project = tmp_path / "home", tmp_path / "project"
    for folder in (home / ".claude", project):
        folder.mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"env": {"FROM_SETTINGS": "yes"}}), encoding="utf-8")
    (home / ".claude.json").write_text(
        json.dumps({"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}),
        encoding="utf-8",
    )
    dump = tmp_path / "dump.py"
    dump.write_text(DUMP_ENVIRONMENT, encoding="utf-8")
    entry_env = {"bare": {}, "own": {"ANTHROPIC_API_KEY": "sk-entry-key"}}
    servers = {
        name: {"command": sys.executable, "args": [str(dump), str(tmp_path / f"{name}.json")], "env": env}
        for name, env in entry_env.items()
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    with anyio.fail_after(240):
        await anyio.run_process(
            [str(CLAUDE), "-p", "hello", "--mcp-config", str(config), "--strict-mcp-config"],
            cwd=project,
            check=False,
            env=claude_environment(home, fake, SOMETHING_OF_THE_SHELL="kept"),
        )
    bare, own = (json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8")) for name in ("bare", "own"))
    assert (bare["ANTHROPIC_API_KEY"], own["ANTHROPIC_API_KEY"]) == (KEY, "sk-entry-key")
    for environment in (bare, own):
        assert environment["ANTHROPIC_BASE_URL"] == fake.url  # also where the entry's own key goes
        assert (environment["SOMETHING_OF_THE_SHELL"], environment["FROM_SETTINGS"]) == ("kept", "yes")
