"""The same agent files, the same settings and the same launch, in Claude Code 2.1.328 itself and in our server
under it: Claude Code's main model launches one subagent with its own `Agent` tool and one with our `Task`, both
without `subagent_type`. What each side did is compared:

- `subagent_type` is optional on both (general-purpose runs), and Claude Code's launching tool is named `Agent`;
- `model: inherit` / no model runs on the person's main model, here the `model` of `~/.claude/settings.json`;
- Markdown without frontmatter in `.claude/agents` (CLAUDE.md, CONTRIBUTING.md) is skipped without a word, and a
  file with broken frontmatter is reported (Claude Code: a debug line; ours: the error names the file);
- a PreToolUse hook whose matcher names the old `Task` fires for Claude Code's `Agent` calls, as ours does.

Runs when the `claude` binary is found (see test_claude_code.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.e2e.test_claude_code import CLAUDE, KEY, NEEDS_CLAUDE, claude_environment
from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn
from tests.support import server_environment

pytestmark = pytest.mark.anyio

HOOK = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(json.load(sys.stdin)['tool_name']) + '\\n')"
NOT_AGENTS = {"CLAUDE.md": "# House rules\n\nBe brief.\n", "CONTRIBUTING.md": "Send patches by mail.\n"}
BROKEN = "---\nname: nodesc\n---\nNo description.\n"
BROKEN_LAUNCH = {"description": "broken", "subagent_type": "nodesc"}


def _first_prompt(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def _results(body: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for message in body["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                content = block.get("content")
                parts = cast(list[dict[str, Any]], content) if isinstance(content, list) else [{"text": str(content)}]
                found.append("".join(part.get("text", "") for part in parts))
    return found


def script(body: dict[str, Any]) -> Turn:
    """The main model launches ours, then Claude Code's own, neither naming an agent type; each subagent answers."""
    prompt = _first_prompt(body)
    if "OURS-SUB" in prompt or "CC-SUB" in prompt:
        return turn(text("sub done"))
    if "Delegate the work." not in prompt:
        return turn(text("ok"))  # anything else Claude Code asks on its own
    done = _results(body)
    if not done:
        return turn(tool_use("mcp__subagents__Task", {"description": "ours", "prompt": "OURS-SUB: answer."}))
    if len(done) == 1:
        launch = {"description": "theirs", "prompt": "CC-SUB: answer.", "run_in_background": False}
        return turn(tool_use("Agent", launch))
    if len(done) == 2:  # the agent whose file is broken, from ours and then from Claude Code
        return turn(tool_use("mcp__subagents__Task", {**BROKEN_LAUNCH, "prompt": "OURS-SUB: answer."}))
    if len(done) == 3:
        return turn(tool_use("Agent", {**BROKEN_LAUNCH, "prompt": "CC-SUB: answer.", "run_in_background": False}))
    return turn(text("MAIN:\n" + "\n---\n".join(done)))


async def _run(tmp_path: Path, fake: FakeLLM) -> tuple[str, str, list[str]]:
    """`claude -p` in a trusted project with the agent files above, `"model": "haiku"` in the user settings and a
    PreToolUse hook on `Task`; returns its result, its debug log and the tools the hook saw."""
    home, project = tmp_path / "home", tmp_path / "project"
    agents = project / ".claude" / "agents"
    for folder in (home / ".claude", agents):
        folder.mkdir(parents=True)
    for name, content in {**NOT_AGENTS, "nodesc.md": BROKEN}.items():
        (agents / name).write_text(content, encoding="utf-8")
    hook, seen = tmp_path / "hook.py", tmp_path / "seen.jsonl"
    hook.write_text(HOOK, encoding="utf-8")
    matcher = {"matcher": "Task", "hooks": [{"type": "command", "command": f"{sys.executable} {hook} {seen}"}]}
    settings = {"model": "haiku", "hooks": {"PreToolUse": [matcher]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    trusted = {"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}
    (home / ".claude.json").write_text(json.dumps(trusted), encoding="utf-8")
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "mcp_subagents", "serve"],
        "env": server_environment(home, fake=fake, key=KEY, state=tmp_path / "state"),
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"subagents": server}}), encoding="utf-8")
    debug = tmp_path / "debug.log"
    arguments = ["-p", "Delegate the work.", "--mcp-config", str(config), "--strict-mcp-config"]
    arguments += ["--allowedTools", "mcp__subagents__Task", "--output-format", "json", "--debug-file", str(debug)]
    environment = claude_environment(home, fake)
    with anyio.fail_after(240):
        run = await anyio.run_process([str(CLAUDE), *arguments], cwd=project, check=False, env=environment)
    output = run.stdout.decode(errors="replace")
    assert run.returncode == 0, f"{output}\n{run.stderr.decode(errors='replace')}"
    hooked = seen.read_text(encoding="utf-8").splitlines() if seen.exists() else []
    return json.loads(output)["result"], debug.read_text(encoding="utf-8"), [json.loads(line) for line in hooked]


@NEEDS_CLAUDE
async def test_claude_code_and_our_server_agree_on_agent_type_model_and_files(tmp_path: Path, fake: FakeLLM) -> None:
    fake.default = script
    result, log, hooked = await _run(tmp_path, fake)
    bodies = [request["body"] for request in fake.requests if "messages" in request["body"]]
    main = next(body for body in bodies if "Delegate the work." in _first_prompt(body))
    ours = next(body for body in bodies if "OURS-SUB" in _first_prompt(body))
    theirs = next(body for body in bodies if "CC-SUB" in _first_prompt(body))
    # subagent_type is optional on both launching tools, and Claude Code's own is named Agent.
    schemas = {tool["name"]: tool["input_schema"] for tool in main["tools"]}
    assert schemas["Agent"]["required"] == schemas["mcp__subagents__Task"]["required"] == ["description", "prompt"]
    ours_text, theirs_text, ours_broken, theirs_broken = result.removeprefix("MAIN:\n").split("\n---\n")
    assert ours_text.startswith('<task_result agent="general-purpose">sub done')
    assert "sub done" in theirs_text
    # Our nested launching tool carries Claude Code's name too (general-purpose has no `tools` line).
    assert "Agent" in [tool["name"] for tool in ours["tools"]] and "Task" not in [
        tool["name"] for tool in ours["tools"]
    ]
    # general-purpose (`model: inherit`) ran on the person's main model, the settings' haiku, on both sides.
    assert main["model"] == theirs["model"] == ours["model"] == "claude-haiku-5-5"
    assert "; model: claude-haiku-5-5; effort: medium;" in ours_text
    # A PreToolUse matcher naming the old Task fires for Claude Code's Agent (and not for an MCP tool's name).
    assert hooked == ["Agent", "Agent"]
    # Markdown without frontmatter: not a word from Claude Code; the broken file: reported by both, and ours says
    # which file and why where Claude Code's "not found" does not.
    assert "agents/CLAUDE.md" not in log and "agents/CONTRIBUTING.md" not in log
    assert 'agents/nodesc.md: Missing required "description"' in log
    assert theirs_broken.startswith("Agent type 'nodesc' not found. Available agents: ")
    broken_file = tmp_path / "project" / ".claude" / "agents" / "nodesc.md"
    assert f"Agent type 'nodesc' not found. The file {broken_file} defines it but did not load: missing required" in (
        ours_broken
    )
