"""Folders too wide to be a project: `/`, the home directory and the folders that hold it, links resolved."""

from __future__ import annotations

from pathlib import Path

from mcp_subagents.sandbox.wide import too_wide


def test_the_root_the_home_directory_and_its_ancestors_are_too_wide(tmp_path: Path) -> None:
    home = tmp_path / "users" / "ada"
    home.mkdir(parents=True)
    root = too_wide(Path("/"), home)
    assert root is not None and "root of the filesystem" in root
    mine = too_wide(home, home)
    assert mine is not None and "your home directory" in mine and "cannot confine writes" in mine
    above = too_wide(tmp_path / "users", home)
    assert above is not None and "holds your home directory" in above


def test_a_project_inside_the_home_directory_or_beside_it_is_not(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    assert too_wide(home / "project", home) is None
    assert too_wide(tmp_path / "elsewhere", home) is None
    assert too_wide(tmp_path / "home-other", home) is None  # a sibling whose name starts the same


def test_links_are_resolved_on_both_sides(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "link-to-home").symlink_to(home)
    (tmp_path / "home-link").symlink_to(home)
    reason = too_wide(tmp_path / "link-to-home", home)
    assert reason is not None and str(tmp_path / "link-to-home") in reason and str(home) in reason
    assert too_wide(home, tmp_path / "home-link") is not None
