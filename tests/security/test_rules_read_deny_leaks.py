"""Attack: `Read(**/.env)` stops Read, so search for the secret with Grep, or list it with Glob, instead.

Before the fix, Grep over the project printed the file's lines and Glob listed it."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide
from mcp_subagents.permissions.context import read_filter
from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment

SECRET = "SECRET-TOKEN-5f2e"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = (tmp_path / "work").resolve()
    (work / "app" / "config").mkdir(parents=True)
    (work / ".env").write_text(f"API_TOKEN={SECRET}\n", encoding="utf-8")
    (work / "app" / "config" / ".env").write_text(f"DB={SECRET}\n", encoding="utf-8")
    (work / "app" / "keys.pem").write_text(f"{SECRET}\n", encoding="utf-8")
    (work / "app" / "main.py").write_text(f"# mentions {SECRET.lower()} only in lower case\nTOKEN = 1\n")
    (work / "alias.txt").symlink_to(work / ".env")
    return work


def run(project: Path, tool: str, arguments: dict[str, object]) -> str:
    policy = PermissionPolicy(cwd=project, rules=PermissionRules.of(deny=["Read(**/.env)", "Read(*.pem)"]))
    assert decide(policy, tool, arguments).decision == "allow"  # the search itself is allowed
    ctx = ToolContext(
        cwd=project, allowed_roots=(project,), env=sanitized_environment(os.environ), readable=read_filter(policy)
    )
    chosen = builtin_tools()[tool]

    async def go() -> str:
        try:
            return await chosen.run(ctx, chosen.validate(arguments))
        except ToolError as exc:
            return exc.message

    return anyio.run(go)


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "SECRET", "output_mode": "content"},
        {"pattern": "SECRET", "output_mode": "content", "-C": 2, "-i": True},
        {"pattern": "SECRET", "output_mode": "files_with_matches"},
        {"pattern": "SECRET", "output_mode": "count"},
        {"pattern": "TOKEN", "path": "app", "output_mode": "content"},
        {"pattern": ".", "glob": "*.env", "output_mode": "content"},
        {"pattern": "SECRET", "multiline": True, "output_mode": "content"},
    ],
)
def test_grep_never_prints_or_names_a_denied_file(project: Path, arguments: dict[str, object]) -> None:
    text = run(project, "Grep", arguments)
    assert SECRET not in text and ".env" not in text and "keys.pem" not in text, text


def test_grep_still_finds_what_is_allowed(project: Path) -> None:
    text = run(project, "Grep", {"pattern": "secret-token", "-i": True, "output_mode": "content"})
    assert "main.py" in text and ".env" not in text


@pytest.mark.parametrize("pattern", ["**/.env", ".env*", "**/*", "app/**/.*", "**/*.pem", "*"])
def test_glob_never_lists_a_denied_file(project: Path, pattern: str) -> None:
    text = run(project, "Glob", {"pattern": pattern})
    assert ".env" not in text.replace("alias.txt", "") and "keys.pem" not in text, text


def test_a_symlink_to_a_denied_file_is_hidden_too(project: Path) -> None:
    assert "alias.txt" not in run(project, "Glob", {"pattern": "*.txt"})
    assert SECRET not in run(project, "Grep", {"pattern": "SECRET", "output_mode": "content"})
