"""What a read-only command reads (`read_only` finds it), and the one helper its option tables share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Reads:
    """What a read-only command reads."""

    files: tuple[str, ...] = ()
    """Files and folders it names, as written (relative, absolute, `~/...`, or a glob)."""
    trees: tuple[str, ...] = ()
    """Folders whose files' contents it reads, recursively (`grep -r`, `rg`)."""
    moves_to: str | None = None
    """The folder `cd` or `pushd` moves to: later relative paths may be relative to it."""
    repository_from: str | None = None
    """For git: the folder it looks for its repository from (`.`, or where `-C` points). Only the project's own
    repository is read-only: another one (nested, or a bare one carried as plain files) runs its own configuration."""
    follows_links: bool = False
    """It follows symbolic links it finds inside folder operands (`diff dir1 dir2`), so a folder operand could lead
    it anywhere: only file operands are read-only."""


def option_set(*names: str) -> frozenset[str]:
    return frozenset(names)
