"""The files hook commands run: they run outside the Bash sandbox, so no subagent may change them.

A hook command is a line of shell (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`, `python3 scripts/lint_hook.py`).
Every word of it that names an existing file, after `$CLAUDE_PROJECT_DIR`, `$HOME` and `~` are put in, is one: the
script, the program, a configuration file it is given. Those files are kept read-only inside the sandbox and asked
for when Write or Edit would change them, as the settings files that name the hooks are.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from .config import HookSet

_VARIABLE = re.compile(r"\$\{?(CLAUDE_PROJECT_DIR|HOME)\}?")


def hook_scripts(hooks: HookSet, *, project: Path, home: Path) -> tuple[Path, ...]:
    """The existing files the commands of `hooks` name (absolute, each once, in the order found)."""
    found: dict[Path, None] = {}
    for group in hooks.groups:
        for hook in group.hooks:
            for path in _named_files(hook.command, project=project, home=home):
                found[path] = None
    return tuple(found)


def _named_files(command: str, *, project: Path, home: Path) -> Iterable[Path]:
    values = {"CLAUDE_PROJECT_DIR": str(project), "HOME": str(home)}
    expanded = _VARIABLE.sub(lambda match: values[match.group(1)], command)
    try:
        words = shlex.split(expanded, comments=True)
    except ValueError:
        words = expanded.split()
    for word in words:
        if word.startswith("~/"):
            word = str(home / word[2:])
        if not word or word.startswith("-") or "=" in word.split("/")[0]:
            continue
        path = Path(word) if os.path.isabs(word) else project / word
        if os.path.isfile(path):
            yield Path(os.path.realpath(path))
