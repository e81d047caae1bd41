"""Glob's fast path against what it replaced: wcmatch matching every path rg lists.

`PathMatcher` must decide exactly like wcmatch's glob, and the name filter rg applies must never drop a file the
pattern matches (nor bring back one .gitignore hides), so the tool's answers are the ones it always gave.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcmatch import glob as wcglob

from mcp_subagents.core.glob_root import glob_flags
from mcp_subagents.core.subprocesses import find_ripgrep
from mcp_subagents.tools.glob_match import PathMatcher, listing_matcher, may_match_hidden, ripgrep_name_filter

from .conftest import CallTool

pytestmark = pytest.mark.anyio

PATTERN_PIECES = ["*", "**", "?", "a", "b", ".", "/", "{a,b}", "{,.x}", "[ab]", "[!a]", ".x", "x", "-", "é"]
NAME_PIECES = ["a", "b", ".", "x", "ab", ".x", "a.x", "b.a", "-", "é", "{a}"]

patterns = st.lists(st.sampled_from(PATTERN_PIECES), min_size=1, max_size=7).map("".join)
names = st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=3).map("".join)
paths = st.lists(names, min_size=1, max_size=4).map("/".join)


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, candidates=st.lists(paths, min_size=1, max_size=12))
def test_path_matcher_decides_like_wcmatch(pattern: str, candidates: list[str]) -> None:
    reference = wcglob.compile(pattern, flags=glob_flags())
    fast = PathMatcher(pattern)
    for path in candidates:
        assert fast.match(path) == reference.match(path), (pattern, path)


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, candidates=st.lists(paths, min_size=1, max_size=12))
def test_the_name_filter_keeps_every_name_the_pattern_matches(pattern: str, candidates: list[str]) -> None:
    """The filter's globs, tried the way rg tries a type (on the file name alone), accept every match."""
    options = ripgrep_name_filter(pattern)
    if not options:
        return
    name_globs = [option.split(":", 1)[1] for option in options if ":" in option]
    reference = wcglob.compile(pattern, flags=glob_flags())
    for path in candidates:
        if reference.match(path):
            name = path.rpartition("/")[2]
            assert any(_rg_glob_accepts(glob, name) for glob in name_globs), (pattern, path, name_globs)


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, candidates=st.lists(paths, min_size=1, max_size=12))
def test_the_listing_matcher_decides_like_wcmatch_on_what_rg_lists(pattern: str, candidates: list[str]) -> None:
    """Where the name filter alone is trusted (`**/*.py`), the paths it lets through are still decided exactly."""
    options = ripgrep_name_filter(pattern)
    name_globs = [option.split(":", 1)[1] for option in options if ":" in option]
    reference = wcglob.compile(pattern, flags=glob_flags())
    listed = [
        path
        for path in candidates
        if not name_globs or any(_rg_glob_accepts(glob, path.rpartition("/")[2]) for glob in name_globs)
    ]
    assert listing_matcher(pattern)(listed) == [path for path in listed if reference.match(path)], pattern


@settings(max_examples=400, deadline=None)
@given(pattern=patterns, candidates=st.lists(paths, min_size=1, max_size=12))
def test_a_pattern_said_to_match_no_hidden_name_matches_none(pattern: str, candidates: list[str]) -> None:
    """Where Glob lets rg leave hidden files out, wcmatch would have matched none of them."""
    if may_match_hidden(pattern):
        return
    reference = wcglob.compile(pattern, flags=glob_flags())
    for path in candidates:
        if path.startswith(".") or "/." in path:
            assert not reference.match(path), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "hidden"),
    [("**/*.py", False), ("src/*.{ts,tsx}", False), ("**/.env", True), ("*{,.x}", False), ("{a,.b}/*", True)],
)
def test_hidden_files_are_listed_only_for_patterns_that_spell_a_leading_dot(pattern: str, hidden: bool) -> None:
    assert may_match_hidden(pattern) is hidden


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.py", "src/app.py", True),
        ("**/*.py", "app.py", True),
        ("**/*.py", ".app.py", False),
        ("**/*.py", ".venv/lib/site.py", False),
        ("**/*.py", "src/.cache/x.py", False),
        ("**/.env*", "deploy/.envrc", True),
        ("**/.env*", ".config/.envrc", False),
        ("**/*.{ts,tsx}", "web/page.tsx", True),
    ],
)
def test_the_listing_matcher_keeps_the_dot_rules(pattern: str, path: str, matches: bool) -> None:
    assert ripgrep_name_filter(pattern), "these patterns are filtered by name in rg"
    assert listing_matcher(pattern)([path]) == ([path] if matches else [])
    assert bool(wcglob.compile(pattern, flags=glob_flags()).match(path)) is matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*", "main", True),
        ("**/*", "src/app.py", True),
        ("**/*", "a/b.c/d", True),
        ("{**/*,**/*}", "src/app.py", True),
        ("**/*", ".env", False),
        ("**/*", "src/.env", False),
        ("**/*", "src/.cache/x.py", False),
        ("{**/*,**/*}", ".config/tool.json", False),
    ],
)
def test_the_every_file_pattern_keeps_the_dot_rules(pattern: str, path: str, matches: bool) -> None:
    assert not ripgrep_name_filter(pattern), "rg lists every file for this pattern"
    assert listing_matcher(pattern)([path]) == ([path] if matches else [])
    assert bool(wcglob.compile(pattern, flags=glob_flags()).match(path)) is matches


def _rg_glob_accepts(glob: str, name: str) -> bool:
    """The filter's globs are a literal start and end around at most one `*`."""
    start, star, end = glob.partition("*")
    if not star:
        return name == glob
    return len(name) >= len(start) + len(end) and name.startswith(start) and name.endswith(end)


TREE = [
    "main.py",
    "src/app.py",
    "src/app.test.py",
    "src/util/helpers.py",
    "src/web/page.ts",
    "src/web/page.tsx",
    "src/web/.hidden.ts",
    ".github/workflows/ci.yml",
    ".config/tool.json",
    "docs/readme.md",
    "docs/index.ts",
    "build/out.py",
    "debug.log",
    "notes/debug.log",
    "keep/keep.log",
    "a-b/c d.txt",
    "é/été.py",
    "x:y.py",
    "brace{1}.txt",
]

GLOB_PATTERNS = [
    "**/*.py",
    "*.py",
    "src/**/*.{ts,tsx}",
    "**/*.{py,md}",
    "**/index.ts",
    "**/.*",
    "**/.*.ts",
    ".github/**/*.yml",
    "**/*.log",
    "**/*",
    "src/**",
    "**/*.test.*",
    "**/app*",
    "**/[ab]*",
    "**/?ain.py",
    "**/*.{1..3}",
    "**/c d.txt",
    "**/été.py",
    "x:y.py",
    "*:*.py",
    "brace{1}.txt",
    "**/brace*",
    "**/*{,.py}",
    "**/page.ts*",
    "**/*.json",
    "**/*.ts",
    "**/tool.json",
]


@pytest.fixture
def glob_tree(workdir: Path) -> Path:
    for number, name in enumerate(TREE):
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n", encoding="utf-8")
        os.utime(path, ns=(10**18 + number * 10**9, 10**18 + number * 10**9))
    # Whitelisted hidden files: rg lists them even without --hidden, and Glob must still leave them out where
    # wcmatch would (a wildcard does not match a leading dot).
    (workdir / ".gitignore").write_text("build/\n*.log\n!keep/keep.log\n!.config/\n!.hidden.ts\n", encoding="utf-8")
    (workdir / ".git").mkdir()
    (workdir / ".git" / "config.py").write_text("x\n", encoding="utf-8")
    return workdir


def _as_before(root: Path, pattern: str) -> list[str]:
    """The old way: rg lists every file, wcmatch matches each, newest first."""
    argv = [find_ripgrep(), "--files", "--no-config", "--hidden", "--no-require-git", "--color", "never"]
    listed = subprocess.run([*argv, "--glob", "!.git"], cwd=root, capture_output=True, check=True)
    matcher = wcglob.compile(pattern, flags=glob_flags())
    relative = [line for line in listed.stdout.decode("utf-8", "surrogateescape").split("\n") if line]
    matches = [root / line for line in relative if matcher.match(line)]
    return [str(path) for path in sorted(matches, key=lambda path: (-path.stat().st_mtime_ns, str(path)))]


@pytest.mark.parametrize("pattern", GLOB_PATTERNS)
async def test_glob_answers_as_before(call: CallTool, glob_tree: Path, pattern: str) -> None:
    expected = _as_before(glob_tree, pattern)
    result = await call("Glob", {"pattern": pattern})
    assert result.split("\n") == (expected or ["No files found"])
