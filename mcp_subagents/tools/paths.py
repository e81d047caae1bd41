"""Turning a path the model wrote into a real path inside the allowed roots."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from ..errors import ToolError
from .base import ToolContext

PathPurpose = Literal["read", "write"]


def resolve_path(ctx: ToolContext, raw: str, *, purpose: PathPurpose) -> Path:
    """Resolve `raw` (absolute, relative to `ctx.cwd`, or `~`-prefixed) with symlinks followed.

    Raises:
        ToolError: the path is empty or malformed, or it (or, for writing, its parent) resolves
            outside every allowed root.
    """
    resolved = _real_path(_absolute(ctx, raw))
    _require_inside_roots(ctx, raw, resolved)
    if purpose == "write":
        # A dangling symlink or a symlinked directory can point a new file outside the roots.
        _require_inside_roots(ctx, raw, _real_path(resolved.parent))
    return resolved


def is_inside_roots(ctx: ToolContext, path: Path) -> bool:
    return any(path.is_relative_to(root) for root in ctx.allowed_roots)


def _absolute(ctx: ToolContext, raw: str) -> Path:
    if not raw.strip():
        raise ToolError("The path is empty: give a file or directory path.")
    if "\0" in raw:
        raise ToolError("The path contains a NUL character.")
    expanded = Path(os.path.expanduser(raw))
    return expanded if expanded.is_absolute() else ctx.cwd / expanded


def _real_path(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _require_inside_roots(ctx: ToolContext, raw: str, resolved: Path) -> None:
    if is_inside_roots(ctx, resolved):
        return
    roots = ", ".join(str(root) for root in ctx.allowed_roots) or "(none)"
    raise ToolError(
        f"Path '{raw}' resolves to {resolved}, which is outside the working directory. "
        f"Tools may only access files under: {roots}."
    )
