from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment

CallTool = Callable[[str, dict[str, Any]], Coroutine[Any, Any, str]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the working directory, holding a file no tool may touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return folder.resolve()


@pytest.fixture
def ctx(workdir: Path) -> ToolContext:
    return ToolContext(cwd=workdir, allowed_roots=(workdir,), env=sanitized_environment(os.environ))


@pytest.fixture
def call(ctx: ToolContext) -> CallTool:
    """Validate the arguments and run a built-in tool by name, as the loop does."""

    async def run(tool_name: str, arguments: dict[str, Any]) -> str:
        tool = builtin_tools()[tool_name]
        return await tool.run(ctx, tool.validate(arguments))

    return run


def put(root: Path, relative: str | bytes, text: str = "", *, mtime: int | None = None) -> Path:
    """A file under `root` (a bytes name may be any bytes) holding `text`, modified at `mtime` seconds."""
    raw = os.fsencode(root) + b"/" + (relative if isinstance(relative, bytes) else relative.encode())
    path = Path(os.fsdecode(raw))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, ns=(mtime * 10**9, mtime * 10**9))
    return path
