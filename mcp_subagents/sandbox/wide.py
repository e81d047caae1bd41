"""Folders too wide to be a project: the filesystem's root, the home directory, and the folders that hold it.

Hosts often start servers in `/` or in the home directory without `--cwd` or roots. A sandbox whose writable area is
such a folder confines nothing worth the name (every dotfile, every other project), so sandboxed Bash is never run
without asking there, and the sandbox's layout keeps such folders out of the writable area.
"""

from __future__ import annotations

import os
from pathlib import Path


def too_wide(folder: Path, home: Path) -> str | None:
    """Why `folder` cannot serve as a project the sandbox confines writes to, or None when it can.

    Both paths are compared with symlinks resolved: a link to the home directory is the home directory.
    """
    real = Path(os.path.realpath(folder))
    real_home = Path(os.path.realpath(home))
    if real == Path(real.anchor):
        what = "the root of the filesystem"
    elif real == real_home:
        what = "your home directory"
    elif real_home.is_relative_to(real):
        what = f"a folder that holds your home directory ({real_home})"
    else:
        return None
    return f"{_shown(folder, real)} is {what}, so the sandbox cannot confine writes to a project"


def _shown(folder: Path, real: Path) -> str:
    return str(folder) if str(folder) == str(real) else f"{folder} (that is, {real})"
