"""The search for guarded names in a project: what it finds, how it keeps up with changes (with inotify watches
and without them), and where it stops."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_subagents.sandbox import guarded
from mcp_subagents.sandbox.guarded import GuardedTree, git_pointer_targets, moved_aside


@pytest.fixture(params=["watched", "stat-ed"])
def tree_of(request: pytest.FixtureRequest) -> Callable[[Path], GuardedTree]:
    def make(area: Path) -> GuardedTree:
        tree = GuardedTree(area)
        tree._watch_failed = request.param == "stat-ed"  # pyright: ignore[reportPrivateUsage]
        return tree

    return make


def names(tree: GuardedTree) -> set[str]:
    return {str(path.relative_to(tree.area)) for path in tree.snapshot()}


def test_it_finds_guarded_names_bare_repositories_and_pointer_targets(
    tmp_path: Path, tree_of: Callable[[Path], GuardedTree]
) -> None:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "CLAUDE.md").write_text("x")
    (tmp_path / ".vscode").mkdir()
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / ".git").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "vendor.git")], check=True)
    (tmp_path / "store").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "store" / "real")], check=True)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".git").write_text("gitdir: ../store/real\n")
    tree = tree_of(tmp_path)
    assert names(tree) == {"a/b/c/CLAUDE.md", ".vscode", "vendor.git", "store/real", "sub/.git"}
    assert git_pointer_targets(tmp_path / "sub" / ".git") == [tmp_path / "store" / "real"]


def test_it_keeps_up_with_what_comes_goes_and_moves(tmp_path: Path, tree_of: Callable[[Path], GuardedTree]) -> None:
    (tmp_path / "src" / "inner").mkdir(parents=True)
    tree: GuardedTree = tree_of(tmp_path)
    assert names(tree) == set()
    (tmp_path / "src" / "inner" / ".git").mkdir()
    (tmp_path / "new" / "deeper").mkdir(parents=True)
    (tmp_path / "new" / "deeper" / ".envrc").write_text("x")
    assert names(tree) == {"src/inner/.git", "new/deeper/.envrc"}
    (tmp_path / "src").rename(tmp_path / "lib")
    assert names(tree) == {"lib/inner/.git", "new/deeper/.envrc"}
    shutil.rmtree(tmp_path / "new")
    (tmp_path / "lib" / "inner" / ".git").rename(tmp_path / "lib" / "inner" / "git-old")
    assert names(tree) == set()
    tree.close()


def test_it_stops_at_its_depth_and_says_when_a_tree_is_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path.joinpath(*["d"] * 5)
    deep.mkdir(parents=True)
    (deep / ".git").mkdir()
    (deep.parent / ".git").mkdir()
    assert names(GuardedTree(tmp_path)) == {"d/d/d/d/.git"}
    monkeypatch.setattr(guarded, "MAX_FOLDERS", 3)
    small = GuardedTree(tmp_path)
    small.snapshot()
    assert not small.complete


def test_moved_aside_keeps_the_path_below_the_area(tmp_path: Path) -> None:
    area, quarantine = tmp_path / "project", tmp_path / "state" / "moved-aside"
    (area / "src" / "inner" / ".git").mkdir(parents=True)
    (area / "src" / "inner" / ".git" / "config").write_text("[core]\n")
    moved = moved_aside([area / "src" / "inner" / ".git"], area=area, quarantine=quarantine)
    assert len(moved) == 1 and not (area / "src" / "inner" / ".git").exists()
    where, to = moved[0]
    assert where == area / "src" / "inner" / ".git" and to.parts[-3:] == ("src", "inner", ".git")
    assert (to / "config").read_text() == "[core]\n"
