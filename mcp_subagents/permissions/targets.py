"""What a tool call touches, as permission rules see it: the file or directory behind its path argument."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.glob_root import glob_root
from ..core.json_values import JsonObject
from .patterns import real_path

PATH_ARGUMENTS: dict[str, str] = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "path",
    "Grep": "path",
    "LS": "path",
}
"""The argument holding the path, per tool. Glob, Grep and LS default to the working directory."""
_OPTIONAL_PATH = frozenset({"Glob", "Grep", "LS"})


class TargetError(ValueError):
    """The path argument is missing or not usable, so no rule can be checked against it."""


@dataclass(frozen=True, slots=True)
class PathTarget:
    written: str
    """The path as the model wrote it (the working directory for a search without `path`)."""
    paths: tuple[str, ...]
    """The absolute normalized path, then the same with symlinks resolved when that differs."""
    directory: bool
    """A directory searched as a whole (Glob, Grep), rather than one file."""


def path_target(tool: str, arguments: JsonObject, *, cwd: Path, home: Path) -> PathTarget | None:
    """The path a file tool touches; None for tools without a path argument.

    For Glob, the fixed directories at the start of the pattern count too: `secrets/**` searches `secrets`.

    Raises:
        TargetError: the path argument is missing, not a string, empty or holds a NUL character.
    """
    name = PATH_ARGUMENTS.get(tool)
    if name is None:
        return None
    raw = arguments.get(name)
    if raw is None and tool in _OPTIONAL_PATH:
        raw = str(cwd)
    if not isinstance(raw, str):
        raise TargetError(f"{tool} needs '{name}' as a string to check its permissions")
    directory = tool in _OPTIONAL_PATH
    written = raw
    if tool == "Glob":
        pattern = arguments.get("pattern")
        if isinstance(pattern, str):
            raw, directory = _glob_root(raw, pattern)
    absolute = absolute_path(raw, cwd=cwd, home=home)
    if tool == "Grep" and not _is_dir(absolute):
        directory = False
    return PathTarget(written=written, paths=tuple(dict.fromkeys((absolute, real_path(absolute)))), directory=directory)


def absolute_path(raw: str, *, cwd: Path, home: Path) -> str:
    """`raw` made absolute (against `cwd`, `~` meaning `home`) and normalized, without resolving symlinks.

    Raises:
        TargetError: the path is empty or holds a NUL character.
    """
    if not raw.strip():
        raise TargetError("the path is empty")
    if "\0" in raw:
        raise TargetError("the path holds a NUL character")
    if raw == "~" or raw.startswith("~/"):
        raw = str(home) + raw[1:]
    elif raw.startswith("~"):
        raw = os.path.expanduser(raw)
    joined = raw if os.path.isabs(raw) else os.path.join(cwd, raw)
    normalized = os.path.normpath(joined)
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def is_inside(target: PathTarget, roots: Iterable[Path]) -> bool:
    """Whether every form of the target lies under one of the roots (as written or resolved)."""
    bases = [base for root in roots for base in _forms(str(root))]
    return all(any(_within(path, base) for base in bases) for path in target.paths)


def _forms(path: str) -> tuple[str, ...]:
    normalized = os.path.normpath(os.path.abspath(path))
    return tuple(dict.fromkeys((normalized, real_path(normalized))))


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _glob_root(path: str, pattern: str) -> tuple[str, bool]:
    literal, rest = glob_root(pattern)
    if not rest:
        return os.path.join(path, pattern), False
    return (os.path.join(path, literal) if literal else path), True


def _is_dir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False
