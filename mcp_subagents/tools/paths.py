"""Turning a path the model wrote into a real path inside the allowed roots."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path
from typing import Literal

from ..core.errors import ToolError
from .base import ToolContext

PathPurpose = Literal["read", "write"]


def resolve_path(ctx: ToolContext, raw: str, *, purpose: PathPurpose) -> Path:
    """Resolve `raw` (absolute, relative to `ctx.cwd`, or `~`-prefixed) with symlinks followed.

    Raises:
        ToolError: the path is empty or malformed, it (or, for writing, its parent) resolves outside
            every allowed root, or it is an existing regular file with more than one hard link.
    """
    resolved = _real_path(_absolute(ctx, raw))
    _require_inside_roots(ctx, raw, resolved)
    if purpose == "write":
        # A dangling symlink or a symlinked directory can point a new file outside the roots.
        _require_inside_roots(ctx, raw, _real_path(resolved.parent))
    _refuse_hard_link(raw, resolved)
    return resolved


def is_inside_roots(ctx: ToolContext, path: Path) -> bool:
    return any(path.is_relative_to(root) for root in ctx.allowed_roots)


def _absolute(ctx: ToolContext, raw: str) -> Path:
    if not raw.strip():
        raise ToolError("The path is empty: give a file or directory path.")
    if "\0" in raw:
        raise ToolError("The path contains a NUL character.")
    expanded = Path(os.path.expanduser(raw))
    path = expanded if expanded.is_absolute() else ctx.cwd / expanded
    if "\\x" in raw and not os.path.lexists(path):
        # Tools show the bytes of a name that is not UTF-8 as \xNN (see `safe_text`): the model may send that back.
        unescaped = Path(_BYTE_ESCAPE.sub(lambda match: chr(0xDC00 + int(match[1], 16)), str(path)))
        if os.path.lexists(unescaped):
            return unescaped
    return path


_BYTE_ESCAPE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def _real_path(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except OSError:  # a component changed between realpath's lstat and readlink
        raise _swapped(path) from None


def has_other_names(info: os.stat_result) -> bool:
    """A regular file with more than one name. Unlike a symlink, a hard link does not say where its other names
    are: one of them may be outside the allowed roots."""
    return info.st_nlink > 1 and stat.S_ISREG(info.st_mode)


def _link_count(path: Path) -> int:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return 0
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 0


def _refuse_hard_link(raw: str, resolved: Path) -> None:
    links = _link_count(resolved)
    if links > 1:
        raise ToolError(
            f"Path '{raw}' is a file with {links} hard links. A hard link can reach a file outside the "
            "working directory, so file tools do not read or write files that have more than one link."
        )


def _require_inside_roots(ctx: ToolContext, raw: str, resolved: Path) -> None:
    if is_inside_roots(ctx, resolved):
        return
    roots = ", ".join(str(root) for root in ctx.allowed_roots) or "(none)"
    raise ToolError(
        f"Path '{raw}' resolves to {resolved}, which is outside the working directory. "
        f"Tools may only access files under: {roots}."
    )


_DIRECTORY_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_resolved(path: Path, flags: int, *, mode: int = 0o666, make_parents: bool = False) -> int:
    """Open the resolved absolute `path` without following a symlink in any of its components.

    `resolve_path` checked where the path leads; a process that swaps a component for a symlink afterwards must not
    redirect the open. Each directory is opened relative to the one before it with O_NOFOLLOW, so a symlink that
    appeared since the check fails the open instead of being followed.

    Raises:
        ToolError: a component of the path is now a symlink (or no longer a directory).
        OSError: any other failure (FileNotFoundError when the file or a parent is missing).
    """
    parts = path.parts
    fd = os.open(parts[0], _DIRECTORY_FLAGS)
    try:
        for name in parts[1:-1]:
            try:
                next_fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make_parents:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
                next_fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _swapped(path) from None
                raise
            os.close(fd)
            fd = next_fd
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _swapped(path) from None
            raise
    finally:
        os.close(fd)


def _swapped(path: Path) -> ToolError:
    return ToolError(
        f"{path} changed while it was being opened: a symlink took the place of one of its parts. It was not "
        "followed; check the path and try again."
    )
