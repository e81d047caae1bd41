"""The real server as an attacker meets it: a stdio subprocess whose model (the fake LLM) is scripted to attack.

Set `SECURITY_TARGET_CODE=/path/to/other/checkout` to run the same attacks against another version of the server
(the server subprocess imports `mcp_subagents` from there): that is how each attack was checked to succeed on main.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn
from tests.stdio_raw import RawStdioServer
from tests.support import server_environment

PROVIDER_KEY = "sk-ant-attack-suite-0123456789abcdef"
TASK = {"description": "attack", "prompt": "Do as you are told.", "subagent_type": "general-purpose"}


@dataclass
class Scene:
    """A home with a project in it, the server's state directory, and the environment the server starts with."""

    home: Path
    work: Path
    state: Path
    environ: dict[str, str] = field(default_factory=lambda: dict[str, str]())

    def settings(self, document: dict[str, Any]) -> Path:
        path = self.home / "settings.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        self.environ["MCP_SUBAGENTS_SETTINGS"] = str(path)
        return path


def make_scene(root: Path, fake: FakeLLM, *, sandbox: str = "auto", **variables: str) -> Scene:
    home = root / "home"
    work = home / "project"
    state = home / "state"
    environ = server_environment(home, fake=fake, key=PROVIDER_KEY, work=work, state=state, sandbox=sandbox)
    environ |= variables | code_under_test()
    return Scene(home=home, work=work, state=state, environ=environ)


def code_under_test() -> dict[str, str]:
    """Environment variables that make a server subprocess import `SECURITY_TARGET_CODE`'s package, if set."""
    target = os.environ.get("SECURITY_TARGET_CODE")
    return {"PYTHONPATH": target, "PYTHONSAFEPATH": "1"} if target else {}


def bash(command: str, **extra: Any) -> Turn:
    return turn(tool_use("Bash", {"command": command, **extra}))


def tool_results(fake: FakeLLM, request: int = -1) -> list[str]:
    """What the model was told each tool call returned, in the given request (the last one by default)."""
    messages = fake.requests[request]["body"]["messages"]
    blocks = [block for block in messages[-1]["content"] if block.get("type") == "tool_result"]
    texts: list[str] = []
    for block in blocks:
        content = block["content"]
        texts.append(content if isinstance(content, str) else "".join(part.get("text", "") for part in content))
    return texts


async def run_task(
    scene: Scene, fake: FakeLLM, *steps: Turn, background: bool = False, finish: bool = True
) -> tuple[str, RawStdioServer]:
    """Start the server, run one Task whose model takes `steps` then (with `finish`) says "done", and return its
    result text with the (still running) server."""
    fake.push(*steps, *([turn(text("done"))] if finish else []))
    server = await RawStdioServer.start(scene.environ, stderr=subprocess.DEVNULL)
    with anyio.fail_after(60):
        result = await server.call_tool("Task", {**TASK, "run_in_background": background})
    return result, server
