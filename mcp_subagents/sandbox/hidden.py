"""Files that Read deny rules name, found on disk so the sandbox can hide them too.

A rule such as `Read(./config/secrets.json)` names one path; `Read(**/.env)` names every `.env` below the working
directory, which only a walk can find. Walks are limited to the allowed directories and to a rule's own literal
directory (`Read(~/.kube/**)` walks `~/.kube`), and capped, so one broad rule cannot make every command slow.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.subprocesses import CappedBytes, Command, find_ripgrep, run_captured
from ..permissions.patterns import Bases, PathPattern

MAX_HIDDEN_MATCHES = 500
WALK_TIMEOUT_SECONDS = 10.0
_GLOB_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class ReadDenials:
    patterns: tuple[PathPattern, ...]
    bases: Bases
    allowed_roots: tuple[Path, ...]

    async def paths(self, env: dict[str, str]) -> tuple[list[Path], bool]:
        """The existing paths the rules name, and whether there were more than `MAX_HIDDEN_MATCHES`."""
        found, walks = self._plan()
        for root, patterns in walks.items():
            for path in await _files_below(root, env):
                if any(pattern.matches(str(path), self.bases) for pattern in patterns):
                    found.append(path)
                    if len(found) > MAX_HIDDEN_MATCHES:
                        return found[:MAX_HIDDEN_MATCHES], True
        return found, False

    def _plan(self) -> tuple[list[Path], dict[Path, list[PathPattern]]]:
        """The literal paths that exist, and the directories to walk for the patterns that are not literal."""
        found: list[Path] = []
        walks: dict[Path, list[PathPattern]] = {}
        for pattern in self.patterns:
            for base in self.bases.candidates(pattern.anchor):
                literal, walk_root = _split(pattern, Path(base))
                if literal is not None:
                    if os.path.lexists(literal):
                        found.append(literal)
                elif walk_root is not None and self._may_walk(walk_root):
                    walks.setdefault(walk_root, []).append(pattern)
        return found, walks

    def _may_walk(self, root: Path) -> bool:
        if not root.is_dir():
            return False
        if any(root.is_relative_to(allowed) for allowed in self.allowed_roots):
            return True
        # Outside the allowed area only a rule's own directory is walked, never a whole home or filesystem.
        return root not in (Path("/"), Path(self.bases.home)) and len(root.parts) > 2


def _split(pattern: PathPattern, base: Path) -> tuple[Path | None, Path | None]:
    """(the one path a pattern names, None) or (None, the directory to walk for it)."""
    text = pattern.pattern.rstrip("/")
    anchored = text.startswith("/") or "/" in text.strip("/")
    parts = [part for part in text.split("/") if part]
    if not anchored:
        return None, base
    literal: list[str] = []
    for part in parts:
        if _GLOB_CHARACTERS & set(part) or part == "**":
            return None, base.joinpath(*literal)
        literal.append(part)
    return base.joinpath(*literal), None


async def _files_below(root: Path, env: dict[str, str]) -> list[Path]:
    stdout = CappedBytes(32 * 1024 * 1024)
    argv = [find_ripgrep(), "--files", "--hidden", "--no-ignore", "--no-config", "--null", "--", str(root)]
    finished = await run_captured(
        Command(argv=argv, cwd=root, env=env, what="ripgrep"),
        stdout=stdout,
        stderr=CappedBytes(64 * 1024),
        time_limit=WALK_TIMEOUT_SECONDS,
    )
    if finished.timed_out:
        return []
    return [Path(os.fsdecode(raw)) for raw in bytes(stdout.data).split(b"\0") if raw]


def hidden_set(paths: Iterable[Path]) -> list[Path]:
    return sorted({Path(os.path.realpath(path)) for path in paths})
