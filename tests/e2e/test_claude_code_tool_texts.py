"""Claude Code 2.1.328 itself, against the fake Messages API, next to our tools on the same files: Read's line
numbers, the structured `tool_response` its PostToolUse hook gets for Read, Write, Edit and Bash, the commit
attribution reminder of a subagent with Bash, and a command file offered to the Skill tool under its namespace.

A subagent of Claude Code's (`.claude/agents/probe.md`, in a scratch trusted project with a scratch HOME) makes the
calls; the fake scripts them. Runs when the `claude` binary is found, as tests/e2e/test_claude_code.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.agent.attribution import attribution_block
from mcp_subagents.agent.skills import load_skills, skills_listing
from mcp_subagents.config.claude_settings import Credit
from mcp_subagents.models.profiles import model_profile
from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment
from mcp_subagents.tools.base import structured_response
from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn

from .test_claude_code import CLAUDE, NEEDS_CLAUDE, claude_environment

pytestmark = [pytest.mark.anyio, NEEDS_CLAUDE]

FILES = {"short.txt": "alpha\nbeta\n", "edit.txt": "hello world\nsecond\n", "empty.txt": ""}
DUMP = "import json, sys\nopen(sys.argv[1], 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n"
AGENT = "---\nname: probe\ndescription: probe agent\ntools: Read, Write, Edit, Bash, Skill\n---\nPROBE AGENT\n"
CLAUDE_CODES_OWN = {"contentNotInModelContext"}
"""Edit's flag that the model had not read the file: this server does not track what the model read."""


def calls(project: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("Read", {"file_path": str(project / "short.txt")}),
        ("Read", {"file_path": str(project / "empty.txt")}),
        ("Write", {"file_path": str(project / "new.txt"), "content": "brand new\n"}),
        ("Write", {"file_path": str(project / "short.txt"), "content": "alpha\ngamma\n"}),
        ("Edit", {"file_path": str(project / "edit.txt"), "old_string": "world", "new_string": "there"}),
        ("Bash", {"command": "echo out; echo err >&2", "description": "both streams"}),
        ("Skill", {"skill": "ns:sub"}),
    ]


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [
        b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
    ]
    return [block for block in blocks if block.get("type") == "tool_result"]


def script(project: Path) -> Callable[[dict[str, Any]], Turn]:
    planned = calls(project)

    def step(body: dict[str, Any]) -> Turn:
        system = json.dumps(body.get("system"))
        names = {tool.get("name") for tool in body.get("tools", [])}
        done = len(results(body))
        if "PROBE AGENT" in system:
            return turn(tool_use(*planned[done])) if done < len(planned) else turn(text("probe finished"))
        if "Agent" in names and "Delegate" in json.dumps(body["messages"][:1]):
            if done == 0:
                task = {"description": "probe", "prompt": "Probe.", "subagent_type": "probe"}
                return turn(tool_use("Agent", {**task, "run_in_background": False}))
            return turn(text("MAIN DONE"))
        return turn(text("ok"))

    return step


def scratch_project(root: Path) -> tuple[Path, Path]:
    home, project = root / "home", root / "project"
    (home / ".claude").mkdir(parents=True)
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "commands" / "ns").mkdir(parents=True)
    (project / ".claude" / "agents" / "probe.md").write_text(AGENT, encoding="utf-8")
    (project / ".claude" / "commands" / "ns" / "sub.md").write_text("# Nested command\nDo nested things.\n")
    for name, content in FILES.items():
        (project / name).write_text(content, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return home, project


async def run_claude_code(root: Path, fake: FakeLLM) -> tuple[Path, list[dict[str, Any]]]:
    """Claude Code's run: the project it ran in and what its PostToolUse hook got."""
    home, project = scratch_project(root)
    dump, hooks = root / "dump.py", root / "hooks.jsonl"
    dump.write_text(DUMP, encoding="utf-8")
    hook = {"matcher": "*", "hooks": [{"type": "command", "command": f"{sys.executable} {dump} {hooks}"}]}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [hook]}}))
    trusted = {"hasCompletedOnboarding": True, "projects": {str(project): {"hasTrustDialogAccepted": True}}}
    (home / ".claude.json").write_text(json.dumps(trusted), encoding="utf-8")
    fake.default = script(project)
    environment = claude_environment(home, fake, IS_SANDBOX="1")  # bypassPermissions as root (CI containers)
    arguments = ["-p", "Delegate the work.", "--output-format", "json", "--permission-mode", "bypassPermissions"]
    with anyio.fail_after(240):
        done = await anyio.run_process([str(CLAUDE), *arguments], cwd=project, env=environment, check=False)
    assert done.returncode == 0, done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    events = [json.loads(line) for line in hooks.read_text(encoding="utf-8").splitlines()]
    return project, [event for event in events if event.get("agent_type") == "probe"]


async def test_our_tools_answer_as_claude_code_does(tmp_path: Path, fake: FakeLLM) -> None:
    project, events = await run_claude_code(tmp_path / "cc", fake)
    probe = [r["body"] for r in fake.requests if "PROBE AGENT" in json.dumps(r["body"].get("system"))]
    theirs = [str(r["content"]) for r in results(probe[-1])]

    ours_root = tmp_path / "ours"
    _, ours_project = scratch_project(ours_root)
    ctx = ToolContext(cwd=ours_project, allowed_roots=(ours_project,), env=sanitized_environment(os.environ))
    tools = builtin_tools()
    for index, (name, arguments) in enumerate(calls(ours_project)[:6]):
        tool = tools[name]
        answer = await tool.run(ctx, tool.validate(arguments))
        build = structured_response(answer)
        assert build is not None
        expected = json.loads(json.dumps(events[index]["tool_response"]).replace(str(project), str(ours_project)))
        for flag in CLAUDE_CODES_OWN:
            expected.pop(flag, None)
        assert events[index]["tool_name"] == name and build() == expected, (name, arguments)
        if name == "Read" and index == 0:  # the same numbered lines, the empty last one included
            assert answer == theirs[index]

    # The command file is offered under its namespace, described by its first line, as Claude Code lists it.
    catalog = load_skills(ours_project, claude_dir=None)
    listing = skills_listing(catalog)
    assert "- ns:sub: Nested command" in json.dumps(probe[0]) and listing is not None
    assert "- ns:sub: Nested command" in listing
    assert events[6]["tool_response"] == {"success": True, "commandName": "ns:sub"}

    # The attribution reminder names the same trailer lines.
    first = " ".join(block.get("text", "") for block in probe[0]["messages"][0]["content"])
    ours = attribution_block(Credit(), model_profile(probe[0]["model"]))
    assert ours is not None
    for line in ours.splitlines()[2:]:
        if not line.startswith("- "):
            assert line in first, line
