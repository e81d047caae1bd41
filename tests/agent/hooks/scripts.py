"""Real hook scripts for the tests, and agent files and settings that name them."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from tests.support import write_agent


def script(folder: Path, name: str, body: str) -> Path:
    """An executable bash script; `body` runs after `set -u`, with the event JSON on stdin."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/bash\nset -u\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def recorder(folder: Path, name: str, log: Path, *, then: str = "exit 0") -> Path:
    """A hook that appends its event's JSON (one line, in one write: hooks of an event run at once) to `log`, then
    does `then`."""
    return script(folder, name, f"event=$(cat); printf '%s\\n' \"$event\" >> '{log}'\n{then}")


def handler(command: Path | str, **fields: Any) -> dict[str, Any]:
    return {"type": "command", "command": str(command), **fields}


def group(*handlers: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": list(handlers)}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def agent_with_hooks(folder: Path, name: str, hooks: dict[str, Any], *, extra: str = "") -> Path:
    """An agent file whose `hooks:` frontmatter is `hooks` (written as JSON, which YAML reads)."""
    return write_agent(folder, name, extra=f"hooks: {json.dumps(hooks)}\n{extra}")


def settings_with_hooks(path: Path, hooks: dict[str, Any], **more: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **more}), encoding="utf-8")
    return path


def events(log: Path) -> list[dict[str, Any]]:
    """The events a recorder hook logged, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
