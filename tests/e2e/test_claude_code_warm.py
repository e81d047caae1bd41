"""A real Claude Code 2.1.328 (`claude -p`) starts our server twice, as a person's two sessions would: the first
start serves itself and leaves the warm server behind, the second is served by a server forked from it, and the Task
answers the same way both times. Runs when the `claude` binary is found (see test_claude_code.py)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.cli.warm_support import WarmPlace, wait_until_listening, warm_place_in
from tests.e2e.test_claude_code import CLAUDE, KEY, NEEDS_CLAUDE, claude_environment
from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn

pytestmark = [pytest.mark.anyio, NEEDS_CLAUDE]


def script(body: dict[str, Any]) -> Turn:
    """Claude Code's main model delegates once and repeats what came back; our subagent says where it ran."""
    tools = {str(tool.get("name")) for tool in cast(list[dict[str, Any]], body.get("tools", []))}
    messages = cast(list[dict[str, Any]], body.get("messages", []))
    last: object = messages[-1].get("content") if messages else None
    blocks = cast(list[dict[str, Any]], last) if isinstance(last, list) else []
    results = [block for block in blocks if block.get("type") == "tool_result"]
    if "mcp__subagents__Task" in tools:
        if not results:
            task = {"description": "greet", "prompt": "Say hello.", "subagent_type": "general-purpose"}
            return turn(tool_use("mcp__subagents__Task", task))
        return turn(text("MAIN: " + json.dumps(results[0].get("content"))))
    if "TodoWrite" in tools:
        return turn(text("SUBAGENT says hello"))
    return turn(text("ok"))


async def claude_p(place: WarmPlace, fake: FakeLLM, project: Path, config: Path) -> str:
    arguments = ["-p", "Delegate the greeting.", "--mcp-config", str(config), "--strict-mcp-config"]
    arguments += ["--allowedTools", "mcp__subagents__Task", "--output-format", "json"]
    with anyio.fail_after(240):
        run = await anyio.run_process(
            [str(CLAUDE), *arguments],
            cwd=project,
            check=False,
            env=claude_environment(place.home, fake),
        )
    output = run.stdout.decode(errors="replace")
    assert run.returncode == 0, f"{output}\n{run.stderr.decode(errors='replace')}"
    return str(json.loads(output)["result"])


async def test_claude_codes_second_session_is_served_by_the_warm_server(tmp_path: Path, fake: FakeLLM) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="warm-", dir="/tmp"))  # short: a socket's path has at most 107 bytes
    place = WarmPlace(runtime, tmp_path / "home")
    project = tmp_path / "project"
    for folder in (place.home / ".claude", project):
        folder.mkdir(parents=True)
    trusted = {"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}
    (place.home / ".claude.json").write_text(json.dumps(trusted), encoding="utf-8")
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "mcp_subagents", "serve"],
        "env": place.environment(fake, key=KEY),
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"subagents": server}}), encoding="utf-8")
    fake.default = script
    try:
        async with warm_place_in(place):
            first = await claude_p(place, fake, project, config)
            assert "SUBAGENT says hello" in first
            await wait_until_listening(place)
            second = await claude_p(place, fake, project, config)
            assert "SUBAGENT says hello" in second
            log = Path(place.address.log_path).read_text(encoding="utf-8")
            assert log.count("forked server") == 1, log  # the second session, and only it
            assert str(project) in log  # forked for Claude Code's project folder
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
