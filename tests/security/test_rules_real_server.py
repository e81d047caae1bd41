"""The rule attacks of issue 9, through the real server: `mcp-subagents serve` as a stdio subprocess, a host that
cannot be asked (no elicitation), and the fake model calling the tool each Task's prompt names.

Each attack here got through before the fix; every one must now fail and leave its marker file unwritten."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn
from tests.stdio_raw import RawStdioServer
from tests.support import json_object, matched, server_environment

pytestmark = pytest.mark.anyio

SCRIPT = "SCRIPT:"


def follow_the_prompt(body: dict[str, Any]) -> Turn:
    """Call the tool the prompt names (`SCRIPT:{"tool": ..., "input": ...}`); then report what it answered."""
    last = body["messages"][-1]["content"]
    results = [block for block in last if json_object(block) and block.get("type") == "tool_result"]
    if results:
        return turn(text("RESULT: " + json.dumps([block.get("content") for block in results])))
    first: list[dict[str, Any]] = body["messages"][0]["content"]
    prompt = next(block["text"] for block in first if block.get("text", "").startswith(SCRIPT))
    call = json.loads(prompt.removeprefix(SCRIPT))
    return turn(tool_use(call["tool"], call["input"]))


def task(tool: str, arguments: dict[str, Any], *, background: bool = False) -> dict[str, Any]:
    prompt = SCRIPT + json.dumps({"tool": tool, "input": arguments})
    return {
        "description": "attack",
        "prompt": prompt,
        "subagent_type": "general-purpose",
        "run_in_background": background,
    }


@asynccontextmanager
async def serving(tmp_path: Path, fake: FakeLLM, *, mode: str, permissions: dict[str, Any]) -> AsyncGenerator[Any]:
    settings = tmp_path / f"settings-{mode}.json"
    settings.write_text(json.dumps({"permissions": permissions}), encoding="utf-8")
    fake.default = follow_the_prompt
    # The rules themselves are under attack here: with the sandbox on, every command would run confined.
    environ = server_environment(
        tmp_path / "home",
        fake=fake,
        key="sk-ant-rules-attack-0123456789",
        work=tmp_path / "work",
        state=tmp_path / f"state-{mode}",
        sandbox="off",
        MCP_SUBAGENTS_PERMISSION_MODE=mode,
        MCP_SUBAGENTS_SETTINGS=str(settings),
        MCP_SUBAGENTS_MANAGED_SETTINGS_FILE=str(tmp_path / "managed" / "managed-settings.json"),
        MCP_SUBAGENTS_WATCH_INTERVAL="0",
    )
    with anyio.fail_after(120):
        server = await RawStdioServer.start(environ)
        try:
            yield Client(server)
        finally:
            await server.close()


class Client:
    def __init__(self, server: RawStdioServer) -> None:
        self.server = server

    async def run(self, tool: str, arguments: dict[str, Any], *, background: bool = False) -> str:
        answer = await self.server.call_tool("Task", task(tool, arguments, background=background))
        if not background:
            return answer
        task_id = matched(r"task_id: (\w+)", answer)
        return await self.server.call_tool("TaskOutput", {"task_id": task_id, "timeout": 60000})


HIDDEN = {
    "here-string": 'git status <<< "$(touch {marker})"',
    "here-document": "git status <<EOF\n$(touch {marker})\nEOF",
    "process substitution": "git status < <(touch {marker})",
    "redirect from a substitution": 'git status < "$(touch {marker})"',
}


@pytest.mark.parametrize("mode", ["default", "dontAsk"])
async def test_an_exact_rule_runs_no_hidden_code(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    markers: dict[str, Path] = {}
    async with serving(tmp_path, fake, mode=mode, permissions={"allow": ["Bash(git status)"]}) as client:
        for name, template in HIDDEN.items():
            for background in (False, True):
                marker = tmp_path / f"pwned-{mode}-{name.replace(' ', '-')}-{background}"
                markers[f"{name}, background={background}"] = marker
                answer = await client.run("Bash", {"command": template.format(marker=marker)}, background=background)
                assert "Permission denied" in answer, (name, background, answer)
        plain = await client.run("Bash", {"command": "git status"})
    assert [name for name, marker in markers.items() if marker.exists()] == []
    assert "Permission denied" not in plain  # the rule still allows what it names


async def test_deny_rules_evasions_protected_config_and_read_deny_leaks(tmp_path: Path, fake: FakeLLM) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("a", "b", "c", "d", "e"):
        (work / f"victim-{name}").write_text("keep me\n", encoding="utf-8")
    (work / "victims").mkdir()
    (work / "victims" / "f").write_text("keep me\n", encoding="utf-8")
    (work / ".env").write_text("API_TOKEN=LEAKED-SECRET-77\n", encoding="utf-8")
    git = shutil.which("git")
    assert git is not None
    await anyio.run_process([git, "init", "-q", str(work)])
    hook_marker = tmp_path / "pwned-by-git-config"
    permissions = {"allow": ["Bash"], "deny": ["Bash(rm *)", "Read(**/.env)"]}
    async with serving(tmp_path, fake, mode="acceptEdits", permissions=permissions) as client:
        evasions = [
            "/bin/rm -f victim-a",
            "bash -c -- 'rm -f victim-b'",
            "echo 'rm -f victim-c' | bash",
            "find victims -delete",
            "env -S 'rm -f victim-d'",
            "sh <<'EOF'\nrm -f victim-e\nEOF",
        ]
        denied = [await client.run("Bash", {"command": command}) for command in evasions]
        grep = await client.run("Grep", {"pattern": "LEAKED", "output_mode": "content"})
        glob = await client.run("Glob", {"pattern": "**/.env*"})
        config = await client.run(
            "Write",
            {
                "file_path": ".git/config",
                "content": f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {hook_marker}\n",
            },
        )
        settings = await client.run(
            "Write", {"file_path": ".claude/settings.json", "content": '{"permissions": {"allow": ["Bash"]}}'}
        )
        agent = await client.run("Bash", {"command": "mkdir -p .claude/agents && echo x > .claude/agents/evil.md"})
        status = await client.run("Bash", {"command": "git status"})
    assert all("Permission denied" in answer and "Bash(rm *)" in answer for answer in denied), denied
    assert (work / "victims" / "f").exists()
    assert sorted(path.name for path in work.glob("victim-*")) == [f"victim-{n}" for n in "abcde"]
    assert "LEAKED" not in grep and ".env" not in glob
    assert all("Permission denied" in answer for answer in (config, settings, agent)), (config, settings, agent)
    assert not (work / ".claude").exists()
    assert "Permission denied" not in status and not hook_marker.exists()
