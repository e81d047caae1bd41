"""An agent's persistent memory (`memory: user | project | local`), as Claude Code keeps it.

The folder is `~/.claude/agent-memory/<agent>/` (user), `<cwd>/.claude/agent-memory/<agent>/` (project) or
`<cwd>/.claude/agent-memory-local/<agent>/` (local), with the agent's name reduced to letters, digits, `-` and `_`.
It is created before the first request; the system prompt gets instructions and the start of its `MEMORY.md`;
the agent gets Read, Write and Edit, and writes inside the folder are allowed without asking.

A project or local folder that a symlink leads out of the working directory is not trusted: its MEMORY.md is not
read, nothing is created, and no write permission is given (the prompt says the memory is read-only this time).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..definitions import AgentDefinition, MemoryScope

logger = logging.getLogger(__name__)

MEMORY_INDEX: Final = "MEMORY.md"
MAX_INDEX_LINES: Final = 200
MAX_INDEX_BYTES: Final = 25 * 1024
MEMORY_TOOLS: Final = ("Read", "Write", "Edit")

_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")

_SCOPE_NOTES: Final[dict[MemoryScope, str]] = {
    "user": "- This memory is user-scoped: it goes with you into every project, so keep what you save general.",
    "project": (
        "- This memory is project-scoped and shared with the team through version control: keep what you save "
        "about this project."
    ),
    "local": (
        "- This memory is local to this machine and not in version control: keep what you save about this project "
        "as it is set up here."
    ),
}

MEMORY_GUIDE: Final = """\
# Persistent Agent Memory

The folder `{directory}` is your memory: it outlives this task. {existence}

Build it up over your tasks so that next time you start with what you learned this time.

## How to keep it
- `MEMORY.md` in that folder is the index. It is shown to you below at the start of every task, but only its first \
{lines} lines, so keep it short: one line per topic, each pointing to a topic file.
- Put the details in topic files (for example `conventions.md`, `debugging.md`) and link them from `MEMORY.md`.
- Worth saving: stable facts about the code and how it is built and tested; decisions and why they were made; \
fixes for problems that took effort to solve; how the user likes the work done.
- Not worth saving: what is only true during this task (work in progress, temporary state); what the code or the \
git history already says; secrets, keys and personal data.
- Before you save, look for a memory on the same topic and update it rather than adding a second one. Correct or \
delete a memory once you find it is wrong.
- When you are asked to remember something, save it right away; when asked to forget something, delete it.
{scope_note}

## MEMORY.md

{index}"""

EXISTS: Final = "The folder is there already: save files into it with the Write tool straight away, no mkdir or checks."
READ_ONLY: Final = (
    "It cannot be used this time: it (or a folder above it) is a link leading out of this working directory, or "
    "could not be checked. Treat the memory as read-only: do not create or change files in it."
)
EMPTY_INDEX: Final = "Nothing is in MEMORY.md yet. What you add to it shows up here from your next task on."


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMemory:
    scope: MemoryScope
    directory: Path
    prompt: str
    """The system prompt section: instructions and the start of MEMORY.md."""
    writable: bool
    """False when the folder could not be trusted: no folder made, no write permission given."""


def memory_directory(definition: AgentDefinition, *, cwd: Path, claude_dir: Path | None) -> Path | None:
    if definition.memory is None:
        return None
    folder = _UNSAFE.sub("-", definition.name) or "unknown"
    if definition.memory == "project":
        return cwd / ".claude" / "agent-memory" / folder
    if definition.memory == "local":
        return cwd / ".claude" / "agent-memory-local" / folder
    return None if claude_dir is None else claude_dir / "agent-memory" / folder


def prepare_memory(definition: AgentDefinition, *, cwd: Path, claude_dir: Path | None) -> AgentMemory | None:
    """Create the agent's memory folder and build its prompt section; None when the agent has no memory."""
    directory = memory_directory(definition, cwd=cwd, claude_dir=claude_dir)
    if definition.memory is None or directory is None:
        return None
    contained = definition.memory == "user" or _stays_inside(directory, cwd)
    writable = contained
    if contained:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            logger.warning("agent %s: cannot create its memory folder %s: %s", definition.name, directory, exc)
            writable = False
    index = _read_index(directory / MEMORY_INDEX, follow_links=definition.memory == "user") if writable else None
    prompt = MEMORY_GUIDE.format(
        directory=f"{directory}/",
        existence=EXISTS if writable else READ_ONLY,
        lines=MAX_INDEX_LINES,
        scope_note=_SCOPE_NOTES[definition.memory],
        index=index or EMPTY_INDEX,
    )
    return AgentMemory(scope=definition.memory, directory=directory, prompt=prompt, writable=writable)


def memory_allow_rules(memory: AgentMemory) -> tuple[str, ...]:
    """Permission rules that let the agent read and change files inside its own memory folder."""
    if not memory.writable:
        return ()
    folder = memory.directory.resolve()
    return (f"Edit(/{folder}/**)", f"Read(/{folder}/**)")


def _stays_inside(directory: Path, cwd: Path) -> bool:
    """Whether `directory`, with every symlink on its way resolved (missing parts included), is under `cwd`."""
    try:
        return directory.resolve().is_relative_to(cwd.resolve())
    except (OSError, RuntimeError):
        return False


def _read_index(path: Path, *, follow_links: bool) -> str | None:
    """The first `MAX_INDEX_LINES` lines / `MAX_INDEX_BYTES` bytes of MEMORY.md; None when absent or empty.

    Inside a project only a regular file is read: a link could expose any file the server can read."""
    try:
        if not follow_links and (path.is_symlink() or not path.is_file()):
            return None
        data = path.read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    lines = text.splitlines()
    cut_lines = len(lines) > MAX_INDEX_LINES
    text = "\n".join(lines[:MAX_INDEX_LINES])
    encoded = text.encode("utf-8")
    cut_bytes = len(encoded) > MAX_INDEX_BYTES
    if cut_bytes:
        text = encoded[:MAX_INDEX_BYTES].decode("utf-8", errors="ignore")
    if cut_lines or cut_bytes:
        text += (
            f"\n\n[MEMORY.md is longer than {MAX_INDEX_LINES} lines or {MAX_INDEX_BYTES // 1024} KB and was cut "
            "here. Shorten it: move details into topic files.]"
        )
    return text
