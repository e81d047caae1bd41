"""Every way out of the allowed roots, tried through the real tools."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import ToolContext, builtin_tools

from .conftest import CallTool

pytestmark = pytest.mark.anyio

SECRET = "top secret\n"


def attempts(target: str) -> list[tuple[str, dict[str, Any]]]:
    """One call per file tool that would touch `target`."""
    return [
        ("Read", {"file_path": target}),
        ("Write", {"file_path": target, "content": "overwritten"}),
        ("Edit", {"file_path": target, "old_string": "top", "new_string": "no"}),
        ("Grep", {"pattern": "secret", "path": target}),
    ]


async def refused(call: CallTool, tool: str, arguments: dict[str, Any], *, why: str) -> str:
    with pytest.raises(ToolError) as caught:
        await call(tool, arguments)
    assert why in caught.value.message
    assert SECRET.strip() not in caught.value.message
    return caught.value.message


def unchanged(outside: Path) -> None:
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize(("tool", "arguments"), attempts("../outside/secret.txt"))
async def test_dot_dot_traversal_is_refused(
    call: CallTool, outside: Path, tool: str, arguments: dict[str, Any]
) -> None:
    await refused(call, tool, arguments, why="outside the working directory")
    unchanged(outside)


async def test_dot_dot_inside_a_longer_path_is_refused(call: CallTool, workdir: Path, outside: Path) -> None:
    (workdir / "src").mkdir()
    await refused(call, "Read", {"file_path": "src/../../outside/secret.txt"}, why="outside")
    await refused(call, "Write", {"file_path": "src/../../outside/new.txt", "content": "x"}, why="outside")
    unchanged(outside)


async def test_absolute_paths_outside_are_refused(call: CallTool, outside: Path) -> None:
    for tool, arguments in attempts(str(outside / "secret.txt")):
        await refused(call, tool, arguments, why="outside the working directory")
    await refused(call, "Write", {"file_path": str(outside / "new.txt"), "content": "x"}, why="outside")
    unchanged(outside)


async def test_glob_cannot_list_outside_by_path_or_by_pattern(call: CallTool, outside: Path) -> None:
    await refused(call, "Glob", {"pattern": "*", "path": str(outside)}, why="outside")
    await refused(call, "Glob", {"pattern": "*", "path": ".."}, why="outside")
    await refused(call, "Glob", {"pattern": "../outside/*.txt"}, why="outside")
    await refused(call, "Glob", {"pattern": f"{outside}/*"}, why="outside")


async def test_grep_cannot_search_the_parent_directory(call: CallTool) -> None:
    await refused(call, "Grep", {"pattern": "secret", "path": ".."}, why="outside")


async def test_a_symlinked_file_pointing_out_is_refused(call: CallTool, workdir: Path, outside: Path) -> None:
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    for tool, arguments in attempts("link.txt"):
        await refused(call, tool, arguments, why="outside the working directory")
    unchanged(outside)


async def test_a_symlinked_directory_pointing_out_is_refused(call: CallTool, workdir: Path, outside: Path) -> None:
    (workdir / "linked").symlink_to(outside, target_is_directory=True)
    for tool, arguments in attempts("linked/secret.txt"):
        await refused(call, tool, arguments, why="outside the working directory")
    await refused(call, "Write", {"file_path": "linked/new.txt", "content": "x"}, why="outside")
    await refused(call, "Glob", {"pattern": "*", "path": "linked"}, why="outside")
    await refused(call, "Glob", {"pattern": "linked/*"}, why="outside")
    await refused(call, "Grep", {"pattern": "secret", "path": "linked"}, why="outside")
    unchanged(outside)


async def test_a_search_of_the_working_directory_does_not_follow_a_symlink_out(
    call: CallTool, workdir: Path, outside: Path
) -> None:
    (workdir / "linked").symlink_to(outside, target_is_directory=True)
    (workdir / "alias.txt").symlink_to(outside / "secret.txt")
    assert await call("Grep", {"pattern": "secret"}) == "No files found"
    assert await call("Glob", {"pattern": "**/*.txt"}) == "No files found"


@pytest.mark.parametrize("tool", ["Write", "Edit"])
async def test_a_dangling_symlink_cannot_create_a_file_outside(
    call: CallTool, workdir: Path, outside: Path, tool: str
) -> None:
    (workdir / "dangling").symlink_to(outside / "planted.txt")
    arguments = (
        {"file_path": "dangling", "content": "x"}
        if tool == "Write"
        else {
            "file_path": "dangling",
            "old_string": "",
            "new_string": "x",
        }
    )
    await refused(call, tool, arguments, why="outside the working directory")
    unchanged(outside)


async def test_a_hard_link_to_an_outside_file_is_refused(call: CallTool, workdir: Path, outside: Path) -> None:
    try:
        os.link(outside / "secret.txt", workdir / "hard.txt")
    except OSError as exc:  # pragma: no cover - filesystems without hard links
        pytest.skip(f"hard links are not supported here: {exc}")
    for tool, arguments in attempts("hard.txt"):
        message = await refused(call, tool, arguments, why="2 hard links")
        assert "outside the working directory" in message
    unchanged(outside)


async def test_a_search_of_the_working_directory_does_not_read_a_hard_linked_file(
    call: CallTool, workdir: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", workdir / "hard.txt")
    assert SECRET.strip() not in await call("Grep", {"pattern": "secret", "output_mode": "content"})


async def test_a_file_whose_other_link_was_removed_is_usable_again(call: CallTool, workdir: Path) -> None:
    (workdir / "a.txt").write_text("hello\n", encoding="utf-8")
    os.link(workdir / "a.txt", workdir / "b.txt")
    await refused(call, "Read", {"file_path": "a.txt"}, why="hard links")
    (workdir / "b.txt").unlink()
    assert "hello" in await call("Read", {"file_path": "a.txt"})


async def test_a_second_allowed_root_works_for_every_tool(workdir: Path, outside: Path) -> None:
    ctx = ToolContext(cwd=workdir, allowed_roots=(workdir, outside), env=dict(os.environ))
    tools = builtin_tools()

    async def call(name: str, arguments: dict[str, Any]) -> str:
        tool = tools[name]
        return await tool.run(ctx, tool.validate(arguments))

    secret = str(outside / "secret.txt")
    assert "top secret" in await call("Read", {"file_path": secret})
    assert "top secret" in await call("Read", {"file_path": "../outside/secret.txt"})
    assert secret in await call("Glob", {"pattern": "*.txt", "path": str(outside)})
    assert secret in await call("Grep", {"pattern": "secret", "path": str(outside)})
    await call("Edit", {"file_path": secret, "old_string": "top", "new_string": "not"})
    await call("Write", {"file_path": str(outside / "new.txt"), "content": "fresh"})
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "not secret\n"
    assert (outside / "new.txt").read_text(encoding="utf-8") == "fresh"


async def test_a_root_does_not_cover_its_sibling_with_the_same_prefix(
    tmp_path: Path, workdir: Path, outside: Path
) -> None:
    sibling = tmp_path / "outside-2"
    sibling.mkdir()
    (sibling / "x.txt").write_text("x", encoding="utf-8")
    ctx = ToolContext(cwd=workdir, allowed_roots=(workdir, outside), env={})
    tool = builtin_tools()["Read"]
    with pytest.raises(ToolError, match="outside"):
        await tool.run(ctx, tool.validate({"file_path": str(sibling / "x.txt")}))
