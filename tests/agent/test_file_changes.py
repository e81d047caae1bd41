"""The changed-files watch on its own: line counts, what a scan skips and where it gives up, files too large to
compare, paths that are not files, and how a resumed task's runs and a parent's children combine."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent import file_changes
from mcp_subagents.agent.file_changes import (
    ChangeWatch,
    FileChange,
    FileChanges,
    after_earlier,
    line_counts,
    with_children,
)

pytestmark = pytest.mark.anyio


async def watched(root: Path, *, scan: bool = True, unseen_writes: bool = True) -> ChangeWatch:
    watch = ChangeWatch(root=root, allowed=(root,), scan=scan, unseen_writes=unseen_writes)
    watch.start()
    await watch.first_scan_done()
    return watch


def test_line_counts_are_exact_for_edits_in_place_and_ignore_moved_lines() -> None:
    assert line_counts(b"a\nb\nc\n", b"a\nB\nc\nd\n") == (2, 1)
    assert line_counts(b"a\nb\n", b"b\na\n") == (0, 0)
    assert line_counts(b"", b"x\ny") == (2, 0)


async def test_a_scan_finds_what_any_process_did_and_skips_git_and_agent_worktrees(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("same\n")
    (tmp_path / "changed.txt").write_text("one\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    watch = await watched(tmp_path)
    (tmp_path / "changed.txt").write_text("one\ntwo\n")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("a\nb\nc\n")
    for inside in (tmp_path / ".git" / "objects", tmp_path / ".claude" / "worktrees" / "agent-1"):
        inside.mkdir(parents=True)
        (inside / "file").write_text("x\n")
    changes = await watch.finish()
    assert [(c.path, c.kind, c.added, c.removed) for c in changes.files] == [
        ("changed.txt", "modified", None, None),  # found by the scan alone: its content before is not known
        ("gone.txt", "deleted", None, None),
        ("new.txt", "created", 3, 0),
    ]
    assert changes.root == str(tmp_path.resolve()) and not changes.partial


@pytest.mark.parametrize(
    ("command", "scanned"),
    [("ls -la && grep -rn TODO .", False), ("git status", True), ("make", True), ("cat a > b", True)],
)
async def test_the_end_scan_runs_only_after_a_call_that_may_write_unseen(
    tmp_path: Path, command: str, scanned: bool
) -> None:
    watch = await watched(tmp_path, unseen_writes=False)
    await watch.before_call("Read", {"file_path": "x"}, tmp_path)
    await watch.before_call("Bash", {"command": command}, tmp_path)
    (tmp_path / "by-someone.txt").write_text("x\n")
    assert bool((await watch.finish()).files) == scanned


async def test_a_project_too_large_to_scan_still_lists_the_files_remembered_before_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_changes, "MAX_SCANNED_FILES", 3)
    for index in range(5):
        (tmp_path / f"f{index}").write_text("x\n")
    watch = await watched(tmp_path)
    await watch.before_call("Edit", {"file_path": "f0"}, tmp_path)
    (tmp_path / "f0").write_text("y\n")
    (tmp_path / "f1").write_text("y\n")  # by another tool: not seen
    changes = await watch.finish()
    assert [(c.path, c.added, c.removed) for c in changes.files] == [("f0", 1, 1)]
    assert "more than 3 files" in changes.partial


async def test_large_files_are_listed_without_counts_and_a_fifo_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_changes, "MAX_COMPARED_BYTES", 10)
    os.mkfifo(tmp_path / "pipe")
    watch = await watched(tmp_path, scan=False)
    with anyio.fail_after(5):  # opening a FIFO for reading would wait for a writer
        await watch.before_call("Bash", {"command": "echo hi > pipe; cat x | tee big.log -a"}, tmp_path)
    (tmp_path / "big.log").write_text("more than ten bytes\n")
    changes = await watch.finish()
    assert changes.files == (FileChange(path="big.log", kind="created"),)


async def test_a_redirect_outside_the_allowed_folders_is_marked(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    watch = await watched(project)
    await watch.before_call("Bash", {"command": f"echo x >> {elsewhere}/log; echo y > /dev/null"}, project)
    (elsewhere / "log").write_text("x\n")
    [change] = (await watch.finish()).files
    assert change.path == str((elsewhere / "log").resolve()) and change.outside and change.added == 1


def change(path: str, kind: file_changes.ChangeKind, added: int | None = 1, removed: int | None = 0) -> FileChange:
    return FileChange(path=path, kind=kind, added=added, removed=removed)


def test_a_resumed_task_adds_its_latest_run_to_its_earlier_ones() -> None:
    earlier = FileChanges(
        files=(
            change("a", "created", 2),
            change("b", "created"),
            change("c", "deleted", 0, 3),
            change("d", "modified"),
        ),
        root="/p",
    )
    later = FileChanges(
        files=(change("a", "modified", 1, 1), change("b", "deleted", 0, 1), change("c", "created", 2, 0)),
        root="/p",
    )
    combined = after_earlier(earlier, later)
    assert [(c.path, c.kind, c.added, c.removed) for c in combined.files] == [
        ("a", "created", 3, 1),
        ("c", "modified", 2, 3),
        ("d", "modified", 1, 0),
    ]


def test_children_changes_roll_up_marked_and_win_over_the_parents_scan() -> None:
    own = FileChanges(files=(change("x.py", "modified", None, None), change("y.py", "created")), root="/p")
    child = FileChanges(files=(change("x.py", "modified", 4, 2),), root="/p")
    grandchild = FileChanges(files=(FileChange(path="/w/z.py", kind="created", task="g1"),), root="/w")
    rolled = with_children(own, [("c1", child), ("c2", grandchild)])
    assert [(c.path, c.added, c.task) for c in rolled.files] == [
        ("/w/z.py", None, "g1"),
        ("x.py", 4, "c1"),
        ("y.py", 1, ""),
    ]


def test_the_kept_list_is_bounded_and_counts_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_changes, "MAX_KEPT_FILES", 2)
    one = FileChanges(files=tuple(change(f"a{i}", "created") for i in range(2)), more=7, root="/p")
    other = FileChanges(files=tuple(change(f"b{i}", "created") for i in range(2)), more=7, root="/p")
    rolled = with_children(FileChanges(root="/p"), [("c", one), ("d", other)])
    assert [c.path for c in rolled.files] == ["a0", "a1"] and rolled.count == 18


def test_find_and_the_python_scan_stamp_files_alike(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "odd name\nwith a newline").write_text("1")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / ".claude" / "worktrees" / "agent-1").mkdir(parents=True)
    (tmp_path / ".claude" / "worktrees" / "agent-1" / "f").write_text("x")
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    os.symlink("/etc/passwd", tmp_path / "link")
    root = tmp_path.resolve()
    by_find = file_changes.scan_with_find(root)
    assert by_find == file_changes.scan_in_python(root)
    assert isinstance(by_find, dict) and sorted(Path(p).name for p in by_find) == [
        "link",
        "odd name\nwith a newline",
        "settings.json",
    ]


async def test_without_find_the_python_scan_finds_the_same_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_program(name: str, path: str | None = None) -> str | None:
        return None

    monkeypatch.setattr(file_changes.shutil, "which", no_program)
    watch = await watched(tmp_path)
    (tmp_path / "new.txt").write_text("a\n")
    assert [c.path for c in (await watch.finish()).files] == ["new.txt"]


async def test_files_past_the_size_or_memory_limits_are_compared_by_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_changes, "MAX_COMPARED_BYTES", 10)
    monkeypatch.setattr(file_changes, "MAX_REMEMBERED_BYTES", 6)
    (tmp_path / "large").write_text("twelve bytes")
    (tmp_path / "untouched").write_text("twelve bytes")
    (tmp_path / "first").write_text("1234\n")  # kept: 5 of the 6 bytes
    (tmp_path / "second").write_text("5678\n")  # past the budget: its stamp only
    watch = await watched(tmp_path, scan=False)
    for name in ("large", "untouched", "first", "second"):
        await watch.before_call("Write", {"file_path": name}, tmp_path)
    before = (tmp_path / "large").stat().st_mtime_ns
    (tmp_path / "large").write_text("TWELVE BYTES")  # the same size: the time tells it changed
    os.utime(tmp_path / "large", ns=(before + 10**9, before + 10**9))  # a later tick than the coarse clock's
    (tmp_path / "first").write_text("1234\nmore\n")
    (tmp_path / "second").write_text("5678\nmore\n")
    changes = await watch.finish()
    assert [(c.path, c.added) for c in changes.files] == [("first", 1), ("large", None), ("second", None)]


@pytest.mark.parametrize("scan", [file_changes.scan_with_find, file_changes.scan_in_python])
def test_the_state_directory_is_skipped_even_with_glob_characters_in_its_name(
    tmp_path: Path, scan: file_changes.Scan
) -> None:
    state = tmp_path / "st[a]te*?"
    (state / "tasks").mkdir(parents=True)
    (state / "tasks" / "t.jsonl").write_text("{}\n")
    (tmp_path / "stAte").mkdir()  # what the unescaped pattern would match instead
    (tmp_path / "stAte" / "kept").write_text("x")
    found = scan(tmp_path.resolve(), (str(state.resolve()),))
    assert isinstance(found, dict) and [Path(p).name for p in found] == ["kept"]
