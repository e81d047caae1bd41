"""Shared builders for tests that run the whole server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client

from mcp_subagents.config.settings import Settings
from mcp_subagents.core.messages import ToolResult, ToolResultMessage, UserMessage
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import Model, ModelRequest
from mcp_subagents.runtime.service import Subagents

if TYPE_CHECKING:
    from tests.fakes.fake_llm import FakeLLM

MODES = ["legacy", "auto"]
TESTS = Path(__file__).resolve().parent
"""This folder. A program the tests start by path lives in `fakes/`, never here: run as a script, its folder comes
first on sys.path, and `tests/mcp/` would hide the MCP SDK."""
CHECKOUT = TESTS.parent
"""The checkout: `.ci-node/` (the Node tools `.ci/run` installs), the docs, `.ci/`."""
SANDBOX_PYTHON = f"{os.path.realpath(sys.executable)} -S"
"""Python for commands run inside the Bash sandbox: the interpreter the venv's `python` links to, with the standard
library only. Bubblewrap gives a command a /tmp of its own, where a venv under /tmp is missing; and no .pth file
acts in there (coverage's, under --cov, would try to write its data file)."""
TEST_API_KEY = "sk-ant-test-key-123"
SYSTEM_PATH = "/usr/bin:/bin"


class RuleLists(TypedDict, total=False):
    """Permission rule strings by kind, as tests hand them to `PermissionRules.of(**rules)`."""

    allow: list[str]
    ask: list[str]
    deny: list[str]


QUIET_ASK_TIMEOUT = 1.0
"""How long a test's permission question waits when no test answers it."""


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings for a server on `tmp_path`. The Bash sandbox is off unless a test asks for it (`sandbox="auto"`):
    most tests are about what happens around a command, and the sandbox suite tests it on its own. A permission
    question nobody answers is denied after `QUIET_ASK_TIMEOUT` (the server waits an hour for a person)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    base = Settings(
        cwd=work.resolve(),
        state_dir=tmp_path / "state",
        user_agents_dir=tmp_path / "user-agents",
        claude_dir=tmp_path / "claude-home",
        user_settings_file=tmp_path / "home" / ".claude" / "settings.json",
        managed_settings_file=tmp_path / "managed" / "managed-settings.json",
        claude_config_file=tmp_path / "home" / ".claude.json",
        sandbox="off",  # in-process tests run Bash unconfined unless they ask for the sandbox
        ask_timeout=QUIET_ASK_TIMEOUT,
    )
    return replace(base, **overrides)


def write_agent(
    folder: Path, name: str, *, description: str = "does things", body: str = "You help.", extra: str = ""
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8")
    return path


@asynccontextmanager
async def running_app(
    settings: Settings, *, model: Model | None = None, environ: dict[str, str] | None = None
) -> AsyncGenerator[Subagents]:
    app = Subagents(settings, model=model, environ=environ if environ is not None else {})
    async with app.running():
        yield app


@asynccontextmanager
async def connected(
    settings: Settings,
    *,
    mode: str = "auto",
    model: Model | None = None,
    environ: dict[str, str] | None = None,
    **client_options: Any,
) -> AsyncGenerator[Client]:
    async with running_app(settings, model=model, environ=environ) as app:
        async with Client(build_server(app), mode=mode, **client_options) as client:
            yield client


def provider_environment(fake: FakeLLM, key: str = TEST_API_KEY) -> dict[str, str]:
    """The variables that send the server's Anthropic client to the fake Messages API."""
    return {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": fake.url}


def server_environment(
    home: Path,
    *,
    fake: FakeLLM | None = None,
    key: str = TEST_API_KEY,
    work: Path | None = None,
    state: Path | None = None,
    sandbox: str | None = None,
    path: str = SYSTEM_PATH,
    **variables: str,
) -> dict[str, str]:
    """The whole environment of a server or command subprocess (`python -m mcp_subagents ...`), none of it taken
    from the test runner's: `home` as HOME, system tools only on PATH, questions denied after `QUIET_ASK_TIMEOUT`,
    no warm server, the state directory (`home/state` unless given), then when given the project
    (`MCP_SUBAGENTS_CWD`, created), the fake Messages API and the sandbox mode, and last `variables` as they are."""
    environ = {
        "HOME": str(home),
        "PATH": path,
        "MCP_SUBAGENTS_STATE_DIR": str(state or home / "state"),
        "MCP_SUBAGENTS_ASK_TIMEOUT": str(QUIET_ASK_TIMEOUT),
        "MCP_SUBAGENTS_NO_WARM": "1",  # a server of its own: tests/cli/test_warm_server.py tries the warm server
    }
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        environ["MCP_SUBAGENTS_CWD"] = str(work)
    if fake is not None:
        environ |= provider_environment(fake, key)
    if sandbox is not None:
        environ["MCP_SUBAGENTS_SANDBOX"] = sandbox
    if coverage := os.environ.get("COVERAGE_PROCESS_CONFIG"):
        environ["COVERAGE_PROCESS_CONFIG"] = coverage  # under pytest --cov, the subprocess is measured too
    return environ | variables


@asynccontextmanager
async def http_server(tmp_path: Path, transport: str, *, environ: dict[str, str] | None = None) -> AsyncGenerator[str]:
    """Start `serve` on a free port as a subprocess; yield its URL once it listens. Without `environ` the server
    has no model provider and works in `tmp_path/work`."""
    command = [sys.executable, "-m", "mcp_subagents", "serve", "--transport", transport, "--port", "0"]
    process = await anyio.open_process(
        command,
        env=environ or server_environment(tmp_path, work=tmp_path / "work"),
        cwd=tmp_path,  # without --cwd the process's folder is the project: never the checkout
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    stderr = TextReceiveStream(process.stderr)
    seen = ""
    try:
        with anyio.fail_after(30):
            async for chunk in stderr:
                seen += chunk
                if match := re.search(r"listening \([\w-]+\) on (http://\S+)", seen):
                    break
            else:
                raise AssertionError(f"server exited before listening:\n{seen}")
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, stderr)
            yield match.group(1)
            group.cancel_scope.cancel()
    finally:
        process.terminate()
        with anyio.fail_after(10):
            await process.wait()


async def _drain(stream: TextReceiveStream) -> None:
    async for _ in stream:
        pass


def last_results(request: ModelRequest) -> tuple[ToolResult, ...]:
    """The tool results that `request` sends back to the model (its last message must carry them)."""
    message = request.messages[-1]
    assert isinstance(message, ToolResultMessage), message
    return message.results


def user_message(request: ModelRequest, index: int = 0) -> UserMessage:
    """The message at `index` of `request`, which must be the user's: the task's prompt, or a hook's follow-up."""
    message = request.messages[index]
    assert isinstance(message, UserMessage), message
    return message


def matched(pattern: str, text: str) -> str:
    """The first group of `pattern`'s first match in `text`; the test fails, showing `text`, when there is none."""
    found = re.search(pattern, text)
    assert found is not None, f"no {pattern!r} in {text!r}"
    return found.group(1)


def json_object(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a value parsed from JSON is an object (so its keys are strings)."""
    return isinstance(value, dict)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


SHARED = Path(os.environ.get("MCP_SUBAGENTS_SHARED") or CHECKOUT / ".." / "shared").resolve()
"""Reference material kept next to the checkout (the agent corpus, Claude Code captures); $MCP_SUBAGENTS_SHARED
points elsewhere."""
REQUIRE_SHARED = "MCP_SUBAGENTS_REQUIRE_CORPUS"


def require_shared(path: Path, what: str) -> None:
    """Skip the test when `path` (under `SHARED`) is missing, saying where it looked; fail instead when
    MCP_SUBAGENTS_REQUIRE_CORPUS=1, as in CI, where the folder is always there."""
    if path.exists():
        return
    where = f"{what} not found at {path}"
    if os.environ.get(REQUIRE_SHARED) == "1":
        pytest.fail(f"{where}, and {REQUIRE_SHARED}=1 requires it", pytrace=False)
    pytest.skip(f"{where}; set {REQUIRE_SHARED}=1 to fail instead of skipping")
