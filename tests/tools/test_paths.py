from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.errors import ToolError
from mcp_subagents.tools import ToolContext
from mcp_subagents.tools.paths import resolve_path


def test_relative_path_resolves_against_the_working_directory(ctx: ToolContext, workdir: Path) -> None:
    assert resolve_path(ctx, "src/a.py", purpose="read") == workdir / "src" / "a.py"


def test_absolute_path_inside_the_working_directory_is_kept(ctx: ToolContext, workdir: Path) -> None:
    assert resolve_path(ctx, str(workdir / "a.txt"), purpose="write") == workdir / "a.txt"


def test_home_is_expanded(ctx: ToolContext, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(workdir))
    assert resolve_path(ctx, "~/notes.md", purpose="read") == workdir / "notes.md"


def test_dot_dot_out_of_the_working_directory_is_refused(ctx: ToolContext, workdir: Path, outside: Path) -> None:
    with pytest.raises(ToolError) as caught:
        resolve_path(ctx, "../outside/secret.txt", purpose="read")
    assert "outside the working directory" in caught.value.message
    assert str(workdir) in caught.value.message


def test_absolute_path_outside_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolError, match="outside the working directory"):
        resolve_path(ctx, str(outside / "secret.txt"), purpose="read")


def test_symlink_pointing_out_is_refused(ctx: ToolContext, workdir: Path, outside: Path) -> None:
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    for purpose in ("read", "write"):
        with pytest.raises(ToolError, match="outside the working directory"):
            resolve_path(ctx, "link.txt", purpose=purpose)


def test_new_file_in_a_symlinked_directory_pointing_out_is_refused(
    ctx: ToolContext, workdir: Path, outside: Path
) -> None:
    (workdir / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the working directory"):
        resolve_path(ctx, "linked/new.txt", purpose="write")


def test_dangling_symlink_pointing_out_is_refused_for_writing(ctx: ToolContext, workdir: Path, outside: Path) -> None:
    (workdir / "dangling").symlink_to(outside / "not-yet.txt")
    with pytest.raises(ToolError, match="outside the working directory"):
        resolve_path(ctx, "dangling", purpose="write")


def test_symlink_inside_the_root_resolves_to_its_target(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "real.txt").write_text("x", encoding="utf-8")
    (workdir / "alias.txt").symlink_to(workdir / "real.txt")
    assert resolve_path(ctx, "alias.txt", purpose="read") == workdir / "real.txt"


def test_every_allowed_root_is_accepted(workdir: Path, outside: Path) -> None:
    ctx = ToolContext(cwd=workdir, allowed_roots=(workdir, outside), env={})
    assert resolve_path(ctx, str(outside / "secret.txt"), purpose="read") == outside / "secret.txt"


def test_the_root_itself_is_inside(ctx: ToolContext, workdir: Path) -> None:
    assert resolve_path(ctx, ".", purpose="read") == workdir


def test_sibling_with_the_root_as_name_prefix_is_outside(tmp_path: Path, ctx: ToolContext) -> None:
    sibling = tmp_path / "work-other"
    sibling.mkdir()
    with pytest.raises(ToolError, match="outside"):
        resolve_path(ctx, str(sibling / "a.txt"), purpose="read")


@pytest.mark.parametrize("raw", ["", "   ", "a\0b"])
def test_empty_or_nul_paths_are_refused(ctx: ToolContext, raw: str) -> None:
    with pytest.raises(ToolError):
        resolve_path(ctx, raw, purpose="read")
