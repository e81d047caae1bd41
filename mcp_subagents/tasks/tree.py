"""Task trees as another process reads them: the nested tasks a task's agent launched, and theirs, found by the
`parent` their transcripts' headers name (a running task's end line, which lists its children, is not written yet).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from ..models.pricing import PriceTable
from .files import TaskSnapshot, read_task, transcripts_dir

MAX_LEVELS = 64


class TreeReader:
    """Finds the nested tasks of a state directory's tasks. Keeps each transcript's parent once read (a header
    never changes), so following a task reads only the new files' first lines and the tree's own transcripts."""

    def __init__(self, state_dir: Path, prices: PriceTable | None = None) -> None:
        self._folder = transcripts_dir(state_dir)
        self._prices = prices
        self._parents: dict[str, tuple[str | None, float]] = {}
        """task id -> (its parent's id, when it was created), for every transcript seen."""

    def subtasks(self, task_id: str) -> list[tuple[int, TaskSnapshot]]:
        """The tasks `task_id`'s agent launched, and theirs, depth first in the order they were launched, each with
        how far below `task_id` it is."""
        children = self._children()
        found: list[tuple[int, TaskSnapshot]] = []

        def walk(parent: str, level: int) -> None:
            for child in children.get(parent, []):
                snapshot = read_task(self._folder / f"{child}.jsonl", self._prices)
                if snapshot is not None and level < MAX_LEVELS:
                    found.append((level, snapshot))
                    walk(child, level + 1)

        walk(task_id, 1)
        return found

    def _children(self) -> dict[str, list[str]]:
        self._read_new_headers()
        children: dict[str, list[str]] = {}
        for task_id, (parent, _) in sorted(self._parents.items(), key=lambda item: item[1][1]):
            if parent is not None:
                children.setdefault(parent, []).append(task_id)
        return children

    def _read_new_headers(self) -> None:
        paths = self._folder.glob("*.jsonl") if self._folder.is_dir() else ()
        for path in paths:
            if path.stem not in self._parents:
                header = _first_line(path)
                if header is not None:
                    self._parents[path.stem] = header


def _first_line(path: Path) -> tuple[str | None, float] | None:
    """(parent, created) from a transcript's header line; None when it has none yet (being created)."""
    try:
        with path.open("rb") as transcript:
            line = transcript.readline()
        entry: object = json.loads(line)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict):
        return None
    header = cast("dict[str, Any]", entry)
    if header.get("type") != "header":
        return None
    parent, created = header.get("parent"), header.get("created")
    return (parent if isinstance(parent, str) else None, float(created) if isinstance(created, int | float) else 0.0)
