"""Files in a working tree that git's own configuration makes it run: they are guarded like `.git` itself.

A repository may keep its hooks in the working tree (`core.hooksPath = .githooks`, as husky and many projects set
it), include a configuration file from it (`[include] path = ../.gitconfig.shared`), or name a program there
(`core.fsmonitor = ./tools/watch.sh`, `filter.x.clean = scripts/clean`, an alias `!./tools/x`). Git then runs
those files with the person's rights at their next commit or `git status`, so a subagent must not change them
either. Read from the repository's `config` (and what it includes) and from the person's own git configuration.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

MAX_CONFIG_BYTES = 256 * 1024
MAX_INCLUDE_DEPTH = 3
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def git_run_paths(git_dir: Path, work_tree: Path | None, home: Path) -> list[Path]:
    """Files and folders that the configuration of the repository at `git_dir` (whose working tree is `work_tree`,
    None when bare) and the person's own git configuration make git run or read as configuration, inside
    `work_tree` (or `git_dir` for a bare repository). Absolute; only those that exist."""
    base = work_tree or git_dir
    found: dict[Path, None] = {}
    sources = [git_dir / "config", home / ".gitconfig", home / ".config" / "git" / "config"]
    for source in sources:
        for section, key, value in _entries(source, home, depth=0):
            for path in _named_paths(section, key, value, base=base, home=home):
                if path.is_relative_to(base) and os.path.lexists(path):
                    found[path] = None
    return list(found)


def _named_paths(section: str, key: str, value: str, *, base: Path, home: Path) -> Iterator[Path]:
    if section == "include" and key == "file":  # a file `_entries` read as part of the configuration
        yield Path(value)
        return
    if section == "core" and key == "hookspath":
        yield _resolve(value, base, home)
        return
    words = _words(value.removeprefix("!"))
    if not words:
        return
    program = words[0]
    if "/" in program or program.startswith("."):
        yield _resolve(program, base, home)


def _entries(config: Path, home: Path, *, depth: int) -> Iterator[tuple[str, str, str]]:
    """(section, key, value) of a git config file and of the files it includes (relative to itself); an included
    file itself comes as ("include", "file", its path)."""
    for section, key, value in _parse(config):
        if section in ("include", "includeif") and key == "path" and value:
            included = _resolve(value, config.parent, home)
            yield "include", "file", str(included)
            if depth < MAX_INCLUDE_DEPTH:
                yield from _entries(included, home, depth=depth + 1)
            continue
        yield section, key, value


def _parse(config: Path) -> list[tuple[str, str, str]]:
    try:
        info = os.stat(config)
    except OSError:
        return []
    return list(_parse_cached(str(config), info.st_mtime_ns, info.st_size))


@lru_cache(maxsize=256)
def _parse_cached(path: str, _mtime: int, _size: int) -> tuple[tuple[str, str, str], ...]:
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ()
    entries: list[tuple[str, str, str]] = []
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        header = _SECTION.match(stripped)
        if header is not None:
            section = header.group(1).lower()
            stripped = header.group(2).strip()
            if not stripped:
                continue
        entry = _ENTRY.match(stripped)
        if entry is not None:
            entries.append((section, entry.group(1).lower(), _value(entry.group(2) or "")))
    return tuple(entries)


def _value(raw: str) -> str:
    """A config value without its comment and its quotes (git's rules, simplified)."""
    out: list[str] = []
    quoted = False
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            out.append(raw[index + 1])
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out).strip()


def _words(value: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _resolve(value: str, base: Path, home: Path) -> Path:
    if value == "~" or value.startswith("~/"):
        return Path(os.path.normpath(str(home) + value[1:]))
    return Path(os.path.normpath(os.path.join(base, value)))
