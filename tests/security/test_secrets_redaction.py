"""The provider key never leaves the server: not in log notifications, not in any encoding, not in its files; and
its files are private.

Before, the key appeared raw in MCP log notifications and base64-encoded everywhere, and the state files were
world-readable (0755/0644) and never cleaned up.
"""

from __future__ import annotations

import base64
import os
import stat
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn

from .server import PROVIDER_KEY, make_scene, run_task

pytestmark = pytest.mark.anyio

ENCODED = {
    "raw": PROVIDER_KEY,
    "base64": base64.b64encode(PROVIDER_KEY.encode()).decode(),
    "base64 of user:key": base64.b64encode(f"user:{PROVIDER_KEY}".encode()).decode(),
    "urlsafe base64": base64.urlsafe_b64encode(PROVIDER_KEY.encode()).decode(),
    "percent-encoded": quote(f"{PROVIDER_KEY}/", safe="").replace("-", "%2D"),
}


def core_of(encoded: str) -> str:
    """The middle of an encoded form: what any unredacted copy must contain."""
    return encoded[8:-8]


async def test_no_form_of_the_key_reaches_the_host_or_the_state_files(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_LOG_LEVEL="DEBUG")
    scene.environ["MCP_SUBAGENTS_PERMISSION_MODE"] = "bypassPermissions"
    leaks = " ".join(ENCODED.values())
    steps = [
        turn(text(f"I will use {leaks}"), tool_use("Bash", {"command": f"echo {ENCODED['base64']} > /dev/null"})),
        turn(text(f"Found the key: {leaks}")),
    ]
    fake.push(*steps)
    from tests.stdio_raw import RawStdioServer

    server = await RawStdioServer.start(scene.environ)
    result = await server.call_tool("Task", {"description": "d", "prompt": "p", "subagent_type": "general-purpose"})
    rest = await server.close()
    host_saw = b"".join(server.stdout_lines).decode() + rest.decode() + result
    assert b"notifications/message" in b"".join(server.stdout_lines)  # log notifications were sent
    written = "".join(path.read_text(errors="replace") for path in scene.state.rglob("*") if path.is_file())
    for name, form in ENCODED.items():
        assert core_of(form) not in host_saw, name
        assert core_of(form) not in written, name
    assert "[redacted]" in result


async def test_state_files_are_private_and_old_ones_are_removed(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_KEEP_DAYS="30")
    tasks = scene.state / "tasks"
    tasks.mkdir(parents=True, mode=0o755)
    scene.state.chmod(0o755)
    old, recent = tasks / "0ld0ld00.jsonl", tasks / "2ecent00.output"
    for path in (old, recent):
        path.write_text("{}\n")
        path.chmod(0o644)
    forty_days_ago = time.time() - 40 * 86400
    os.utime(old, (forty_days_ago, forty_days_ago))
    result, server = await run_task(scene, fake, turn(text("hello")))
    await server.close()
    assert "hello" in result
    assert not old.exists() and recent.exists()
    for folder in (scene.state, tasks):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    files = list(tasks.iterdir())
    assert len(files) == 3  # the recent one and the new task's transcript and output file
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
