"""The one split of a glob into its literal directory and the rest, shared by Glob and the permission check."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.core.glob_root import glob_root
from mcp_subagents.permissions.targets import path_target


@pytest.mark.parametrize(
    ("pattern", "split"),
    [
        ("src/app/**/*.ts", ("src/app", "**/*.ts")),
        ("**/*.py", ("", "**/*.py")),
        ("/etc/*.conf", ("/etc", "*.conf")),
        ("/*", ("/", "*")),
        ("docs/readme.md", ("docs/readme.md", "")),
        ("a]b/c*", ("", "a]b/c*")),  # wcmatch reads `]` as a wildcard character
        ("{src,lib}/*.js", ("", "{src,lib}/*.js")),
    ],
)
def test_glob_root_splits_at_the_first_wildcard(pattern: str, split: tuple[str, str]) -> None:
    assert glob_root(pattern) == split


def test_the_permission_check_judges_the_directory_the_tool_walks(tmp_path: Path) -> None:
    # Before one shared split, the check took <cwd>/a]b as the root while the tool walked <cwd>, or the reverse.
    for pattern in ("a]b/c*", "a[b/c*", "x{y/z*", "plain/dir/*.md"):
        literal, _ = glob_root(pattern)
        target = path_target("Glob", {"pattern": pattern}, cwd=tmp_path, home=tmp_path)
        assert target is not None and target.directory
        assert target.paths[0] == (str(tmp_path / literal) if literal else str(tmp_path))
