"""The orders, caps and filters of Grep and Glob that their fast paths must keep.

Grep sorts content and count results itself (rg's own `--sort path` would search with one thread): the result must
be exactly what `rg --sort path` prints. Files are listed newest first, hard-linked files are left out, head_limit
and offset page the same lines, and a Read deny rule hides its files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.core.subprocesses import find_ripgrep
from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment

from .conftest import CallTool, put

pytestmark = pytest.mark.anyio

HIT = "x\nhit one\ny\nz\nw\nv\nhit two\nq\n"
TRICKY_NAMES = [
    "a/1.txt",
    "a/b/2.txt",
    "a.txt",
    "a-b.txt",
    "A.txt",
    "a0.txt",
    "b/c/d/deep.txt",
    "\u00e9t\u00e9.txt",
    "z.txt",
    ".hidden/h.txt",
    "spaced name.txt",
]
NOT_UTF8_NAMES = [
    b"caf\xe9.txt",
    b"\x80.txt",  # before "\u00e9t\u00e9.txt" by its bytes, which rg sorts by, and after it as text
]


@pytest.fixture
def tricky(workdir: Path) -> Path:
    for number, name in enumerate(TRICKY_NAMES):
        put(workdir, name, HIT, mtime=1_000 + number)
    for number, raw_name in enumerate(NOT_UTF8_NAMES):
        put(workdir, raw_name, HIT, mtime=900 + number)
    put(workdir, "nothing.txt", "no match here\n")
    return workdir


def rg_sorted(root: Path, *options: str) -> str:
    """What rg prints for the same search with its own `--sort path`, in rg's usual `path:line` form."""
    argv = [find_ripgrep(), "--no-config", "--hidden", "--no-require-git", "--color", "never", "--sort", "path"]
    argv += ["--no-heading", "--with-filename", *options, "--glob", "!.git", "-e", "hit", "--", str(root)]
    completed = subprocess.run(argv, capture_output=True, check=True)
    return completed.stdout.decode("utf-8", errors="surrogateescape").removesuffix("\n")


@pytest.mark.parametrize(
    ("arguments", "rg_options"),
    [
        ({"output_mode": "content"}, ("--line-number",)),
        ({"output_mode": "content", "-C": 1}, ("--line-number", "--context", "1")),
        ({"output_mode": "content", "-B": 2}, ("--line-number", "--before-context", "2")),
        ({"output_mode": "content", "-A": 1, "-o": True}, ("--line-number", "--only-matching", "--after-context", "1")),
        ({"output_mode": "content", "-n": False}, ()),
        # Without line numbers Grep has always joined context lines with ":" too.
        ({"output_mode": "content", "-n": False, "-C": 1}, ("--context", "1", "--field-context-separator", ":")),
        ({"output_mode": "content", "-C": 0}, ("--line-number", "--context", "0")),
        (
            {"output_mode": "content", "-A": 0, "-B": 1},
            ("--line-number", "--before-context", "1", "--after-context", "0"),
        ),
        ({"output_mode": "content", "multiline": True, "-A": 1}, ("--line-number", "-U", "--after-context", "1")),
    ],
)
async def test_grep_content_is_in_rg_path_order(
    call: CallTool, tricky: Path, arguments: dict[str, Any], rg_options: tuple[str, ...]
) -> None:
    result = await call("Grep", {"pattern": "hit", "head_limit": 0, **arguments})
    assert result == rg_sorted(tricky, *rg_options)


async def test_grep_count_is_in_rg_path_order(call: CallTool, tricky: Path) -> None:
    result = await call("Grep", {"pattern": "hit", "output_mode": "count", "head_limit": 0})
    listing, summary = result.split("\n\n")
    assert listing == rg_sorted(tricky, "--count")
    files = len(TRICKY_NAMES) + len(NOT_UTF8_NAMES)
    assert summary == f"Found {2 * files} matching lines across {files} files."


async def test_grep_pages_the_sorted_lines(call: CallTool, tricky: Path) -> None:
    everything = rg_sorted(tricky, "--line-number", "--context", "1").split("\n")
    seen: list[str] = []
    offset = 0
    while offset < len(everything):
        page = await call(
            "Grep", {"pattern": "hit", "output_mode": "content", "-C": 1, "head_limit": 7, "offset": offset}
        )
        body, _, note = page.partition("\n\n(Showing results ")
        assert note.startswith(f"{offset + 1}-{min(offset + 7, len(everything))} of {len(everything)}.")
        seen += body.split("\n")
        offset += 7
    assert seen == everything


async def test_grep_lists_files_newest_first_with_ties_by_path(call: CallTool, workdir: Path) -> None:
    put(workdir, "old.txt", "hit\n", mtime=1_000)
    put(workdir, "tie/b.txt", "hit\n", mtime=2_000)
    put(workdir, "tie/a.txt", "hit\n", mtime=2_000)
    put(workdir, "new.txt", "hit\n", mtime=3_000)
    result = await call("Grep", {"pattern": "hit"})
    assert result.split("\n") == [
        "Found 4 files",
        str(workdir / "new.txt"),
        str(workdir / "tie/a.txt"),
        str(workdir / "tie/b.txt"),
        str(workdir / "old.txt"),
    ]
    second_page = await call("Grep", {"pattern": "hit", "head_limit": 2, "offset": 2})
    assert second_page.split("\n")[1:3] == [str(workdir / "tie/b.txt"), str(workdir / "old.txt")]
    assert "(Showing results 3-4 of 4.)" in second_page


async def test_grep_leaves_out_hard_linked_files_between_others(call: CallTool, workdir: Path, outside: Path) -> None:
    put(workdir, "a.txt", HIT)
    os.link(outside / "secret.txt", workdir / "b.txt")
    (outside / "secret.txt").write_text(HIT, encoding="utf-8")
    put(workdir, "c.txt", HIT)
    content = await call("Grep", {"pattern": "hit", "output_mode": "content", "-C": 1})
    assert str(workdir / "b.txt") not in content.split("\n\n")[0]
    listing, _ = content.split("\n(1 hard-linked file(s) skipped")
    expected = rg_sorted(workdir, "--line-number", "--context", "1", "--glob", "!b.txt")
    assert listing == expected
    assert "\n--\n--\n" not in listing
    for mode in ("files_with_matches", "count"):
        result = await call("Grep", {"pattern": "hit", "output_mode": mode})
        assert str(workdir / "b.txt") not in result.split("\n(1 hard-linked")[0]
        assert "1 hard-linked file(s) skipped" in result


async def test_grep_hides_files_a_read_deny_rule_covers_in_every_mode(workdir: Path) -> None:
    for name in ("a.txt", "secret/b.txt", "c.txt"):
        put(workdir, name, HIT)
    hidden = str(workdir / "secret")
    ctx = ToolContext(
        cwd=workdir,
        allowed_roots=(workdir,),
        env=sanitized_environment(os.environ),
        readable=lambda path: not path.startswith(hidden),
    )
    grep = builtin_tools()["Grep"]
    for mode, extra in (("files_with_matches", {}), ("count", {}), ("content", {"-C": 1})):
        result = await grep.run(ctx, grep.validate({"pattern": "hit", "output_mode": mode, **extra}))
        assert "secret" not in result
        assert str(workdir / "a.txt") in result
        assert str(workdir / "c.txt") in result
    content = await grep.run(ctx, grep.validate({"pattern": "hit", "output_mode": "content", "-C": 1}))
    assert content == rg_sorted(workdir, "--line-number", "--context", "1", "--glob", "!secret")


# --- Glob ---------------------------------------------------------------------------------------


async def test_glob_keeps_the_100_newest_with_ties_by_path(call: CallTool, workdir: Path) -> None:
    for number in range(150):
        put(workdir, f"d{number % 3}/f{number:03}.py", "", mtime=1_000 + number // 2)  # pairs share a time
    put(workdir, "d0/other.txt", "", mtime=5_000)
    lines = (await call("Glob", {"pattern": "**/*.py"})).split("\n")
    expected = sorted(
        (str(workdir / f"d{number % 3}/f{number:03}.py") for number in range(150)),
        key=lambda path: (-os.stat(path).st_mtime_ns, path),
    )
    assert lines[:100] == expected[:100]
    assert lines[100] == (
        "(Results are truncated: showing the 100 most recently modified of 150 matches. "
        "Use a more specific path or pattern.)"
    )
    assert len(lines) == 101


async def test_glob_leaves_out_and_does_not_count_files_a_read_deny_rule_covers(workdir: Path) -> None:
    for number in range(120):
        put(workdir, f"{'secret' if number % 2 else 'open'}/f{number:03}.py", "", mtime=1_000 + number)
    hidden = str(workdir / "secret")
    ctx = ToolContext(
        cwd=workdir,
        allowed_roots=(workdir,),
        env=sanitized_environment(os.environ),
        readable=lambda path: not path.startswith(hidden),
    )
    glob = builtin_tools()["Glob"]
    result = await glob.run(ctx, glob.validate({"pattern": "**/*.py"}))
    assert result.split("\n") == [str(workdir / f"open/f{number:03}.py") for number in range(118, -1, -2)]


async def test_glob_lists_names_that_are_not_utf8(call: CallTool, workdir: Path) -> None:
    put(workdir, b"caf\xe9.py", "", mtime=2_000)
    put(workdir, b"d\xff/x.py", "", mtime=1_000)
    put(workdir, "plain.txt", "")
    result = await call("Glob", {"pattern": "**/*.py"})
    assert result.split("\n") == [
        os.fsdecode(os.fsencode(workdir) + b"/caf\xe9.py"),
        os.fsdecode(os.fsencode(workdir) + b"/d\xff/x.py"),
    ]
    assert await call("Glob", {"pattern": "caf*"}) == os.fsdecode(os.fsencode(workdir) + b"/caf\xe9.py")


async def test_glob_respects_gitignore_even_for_names_its_filter_selects(call: CallTool, workdir: Path) -> None:
    put(workdir, ".gitignore", "*.log\nbuild/\n!keep.log\n")
    put(workdir, "a.log", "")
    put(workdir, "keep.log", "")
    put(workdir, "build/b.log", "")
    put(workdir, "build/c.py", "")
    assert await call("Glob", {"pattern": "**/*.log"}) == str(workdir / "keep.log")
    assert await call("Glob", {"pattern": "**/c.py"}) == "No files found"


@pytest.mark.parametrize("path", [None, "src", "src/util", "src/a.py"])
@pytest.mark.parametrize("glob", [None, "src/*.py", "/src/*.py", "*.py", "src/**", "!src/util/**", "/g.py", "*.log"])
async def test_grep_searches_as_when_rg_was_given_the_absolute_path(
    call: CallTool, workdir: Path, path: str | None, glob: str | None
) -> None:
    """rg now gets a path inside the working directory relative to it (it walks that faster): globs anchored to the
    working directory and .gitignore rules must select the same files as with the absolute path."""
    put(workdir, ".gitignore", "/build/\n/lib/*.log\nsrc/util/*.tmp\n")
    for name in ("src/a.py", "src/util/b.py", "src/util/c.tmp", "lib/d.log", "lib/e.py", "build/f.py", "g.py"):
        put(workdir, name, "hit\n")
    argv = [find_ripgrep(), "--no-config", "--hidden", "--no-require-git", "--color", "never", "--sort", "path"]
    argv += ["--count", "--with-filename", *(["--glob", glob] if glob else []), "--glob", "!.git", "-e", "hit"]
    absolute = await anyio.run_process([*argv, "--", str(workdir / (path or ""))], cwd=workdir, check=False)
    expected = absolute.stdout.decode().removesuffix("\n")
    arguments: dict[str, Any] = {"pattern": "hit", "output_mode": "count"}
    arguments |= {"path": path} if path else {}
    arguments |= {"glob": glob} if glob else {}
    result = await call("Grep", arguments)
    assert result.split("\n\n")[0] == (expected or "No matches found")
