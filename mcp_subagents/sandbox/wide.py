"""Folders too wide to be a project: the root of the file system, the home directory, and the folders above it.

Hosts often start servers in `/` or in the home directory. Taken as the project, such a folder would make the whole
home (every other project, the shell's start-up files, the keys' folders) writable for sandboxed commands, and a
sandbox that confines nothing cannot stand in for a question.
"""

from __future__ import annotations

import os
from pathlib import Path


def too_wide(folder: Path, home: Path) -> str | None:
    """Why `folder` is too wide to be confined to as a project, or None when it is not (both resolved through
    symlinks)."""
    real, real_home = Path(os.path.realpath(folder)), Path(os.path.realpath(home))
    if real == Path("/"):
        return "it is the root of the file system"
    if real == real_home:
        return "it is your home directory"
    if real_home.is_relative_to(real):
        return f"it holds your home directory ({real_home})"
    return None
