from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import ToolContext
from mcp_subagents.tools.base import safe_text
from mcp_subagents.tools.paths import open_resolved, resolve_path


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


def test_open_resolved_opens_a_plain_path_and_makes_parents_when_asked(tmp_path: Path) -> None:
    target = tmp_path.resolve() / "a" / "b" / "new.txt"
    fd = open_resolved(target, os.O_WRONLY | os.O_CREAT, make_parents=True)
    os.close(fd)
    assert target.exists()
    with pytest.raises(FileNotFoundError):
        open_resolved(tmp_path.resolve() / "missing" / "x.txt", os.O_RDONLY)


@pytest.mark.parametrize("where", ["directory", "file"])
def test_open_resolved_refuses_a_symlink_anywhere_in_the_path(tmp_path: Path, where: str) -> None:
    root = tmp_path.resolve()
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text("secret")
    if where == "directory":
        (root / "d").symlink_to(root / "outside")
        path = root / "d" / "secret.txt"
    else:
        (root / "f.txt").symlink_to(root / "outside" / "secret.txt")
        path = root / "f.txt"
    with pytest.raises(ToolError, match="a symlink took the place of one of its parts"):
        open_resolved(path, os.O_RDONLY)


def test_names_tools_printed_as_byte_escapes_resolve_back(ctx: ToolContext, workdir: Path) -> None:
    (Path(os.fsdecode(os.fsencode(workdir) + b"/caf\xe9.txt"))).write_text("x")
    resolved = resolve_path(ctx, "caf\\xe9.txt", purpose="read")
    assert os.fsencode(resolved).endswith(b"caf\xe9.txt")
    assert safe_text(str(resolved)).endswith("caf\\xe9.txt")
    assert safe_text("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert safe_text("plain ü text") == "plain ü text"
