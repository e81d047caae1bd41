"""The files a Bash command writes, as far as the command line shows them, for the protected-path check."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from .bash import SimpleCommand, command_start, inner_commands, printed_text, program_name
from .context import PermissionPolicy, protected_write
from .targets import TargetError, absolute_path
from .verdict import Verdict

_WRITES_OPERANDS = frozenset(
    {"tee", "mv", "cp", "ln", "install", "rsync", "rm", "rmdir", "unlink", "shred", "truncate", "touch", "chmod",
     "chown", "chgrp", "mkdir", "mkfifo", "link"}
)  # fmt: skip
"""Programs that write, move, remove or change every file they are given."""
_MAX_NESTING = 3


def protected_writes(policy: PermissionPolicy, subject: str, pieces: tuple[SimpleCommand, ...]) -> Verdict | None:
    """ask when the command writes a protected file without a rule that names it; None otherwise."""
    bases = [str(policy.cwd)]
    known = True
    for index, piece in enumerate(pieces):
        fed = printed_text(pieces[index - 1]) if piece.piped and index else None
        for written in _written(piece, fed, depth=0):
            anchored = os.path.isabs(written) or written == "~" or written.startswith("~/")
            if not anchored and not known:
                continue  # relative to a folder only known when the command runs: beyond what the scanner sees
            for base in bases[:1] if anchored else bases:
                try:
                    path = absolute_path(written, cwd=Path(base), home=policy.home)
                except TargetError:
                    continue
                verdict = protected_write(policy, subject, path)
                if verdict is not None:
                    return verdict
        changed, target = _directory_change(piece)
        if changed and target is None:
            known = False
        elif target is not None:
            bases += [absolute_path(target, cwd=Path(base), home=policy.home) for base in bases]
    return None


def _written(piece: SimpleCommand, fed: str | None, *, depth: int) -> Iterator[str]:
    for redirect in piece.redirects:
        if redirect.writes and redirect.known:
            yield redirect.target
    values = piece.values[command_start(piece.values) :]
    dynamic = piece.dynamic[len(piece.values) - len(values) :] if piece.dynamic else (False,) * len(values)
    if values:
        program, args = program_name(values[0]), list(zip(values[1:], dynamic[1:], strict=False))
        literal = [value for value, changes in args if not changes]
        if program in _WRITES_OPERANDS or (program == "sed" and any(_in_place(value) for value in literal)):
            yield from (value for value in literal if not value.startswith("-"))
        elif program == "dd":
            yield from (value[3:] for value in literal if value.startswith("of="))
    if depth < _MAX_NESTING:
        for inner in inner_commands(piece, fed=fed):
            yield from _written(inner, None, depth=depth + 1)


def _in_place(option: str) -> bool:
    return option.startswith("--in-place") or (option.startswith("-") and not option.startswith("--") and "i" in option)


def _directory_change(piece: SimpleCommand) -> tuple[bool, str | None]:
    """(whether the piece changes directory, where to when the command line shows it)."""
    values = piece.values
    if not values or program_name(values[0]) not in ("cd", "pushd", "popd"):
        return False, None
    operands = [value for value in values[1:] if not value.startswith("-")]
    dynamic = any(piece.dynamic) if piece.dynamic else True
    if program_name(values[0]) == "popd" or len(operands) != 1 or dynamic:
        return True, None
    return True, operands[0]
