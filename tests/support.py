"""Shared builders for tests that run the whole server."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_subagents.config.settings import Settings
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import Model
from mcp_subagents.runtime.service import Subagents

MODES = ["legacy", "auto"]


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings for a server on `tmp_path`. The Bash sandbox is off unless a test asks for it (`sandbox="auto"`):
    most tests are about what happens around a command, and the sandbox suite tests it on its own."""
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
        async with Client(build_server(app), mode=mode, **client_options) as client:  # pyright: ignore[reportArgumentType]
            yield client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


SHARED = Path(os.environ.get("MCP_SUBAGENTS_SHARED") or Path(__file__).resolve().parents[1] / ".." / "shared").resolve()
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
