"""Where a git checkout begins: the one git fact several layers need (trust, skills, the opening message)."""

from __future__ import annotations

import os
from pathlib import Path


def checkout_root(cwd: Path) -> Path | None:
    """The nearest of `cwd` and the folders above it that holds a `.git` (a folder, or the file of a worktree or
    submodule); None when none does."""
    folder = os.fspath(cwd)  # plain strings: this runs a few times per Task, and pathlib cost 5x the stats
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return Path(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def inside_git_checkout(cwd: Path) -> bool:
    """`cwd` or a folder above it holds a `.git`."""
    return checkout_root(cwd) is not None
