"""Notes that tell the model what the sandbox blocked, added to a command's result."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

_READ_ONLY = re.compile(r"read-only file system", re.IGNORECASE)
_NO_NETWORK = re.compile(
    r"could not resolve|temporary failure in name resolution|name or service not known|network is unreachable|"
    r"no address associated|getaddrinfo|failed to resolve|unable to resolve|nodename nor servname|"
    r"failed to establish a new connection|connection refused",
    re.IGNORECASE,
)
_DENIED = re.compile(r"permission denied|operation not permitted", re.IGNORECASE)


def notes(
    output: str,
    *,
    failed: bool,
    writable: Sequence[Path],
    network_refusals: Sequence[str],
    network_allowed: bool,
    hidden: dict[Path, str],
    truncated_hidden: bool,
) -> list[str]:
    found: list[str] = []
    for refusal in network_refusals:
        found.append(
            f"Sandbox: {refusal}. To allow it, add the host to sandbox.network.allowedDomains in the settings "
            "(or run the command with dangerouslyDisableSandbox, which needs approval)."
        )
    if not network_refusals and not network_allowed and failed and _NO_NETWORK.search(output):
        found.append(
            "Sandbox: commands have no network access, because sandbox.network.allowedDomains lists no host. Add "
            "the hosts the command needs there."
        )
    if _READ_ONLY.search(output):
        areas = ", ".join(str(path) for path in dict.fromkeys(writable))
        found.append(
            f"Sandbox: read-only file system: writes are limited to {areas} and /tmp (a private temporary "
            "directory); in them, what programs outside the sandbox run or obey later stays read-only (.git, "
            ".claude/, .agents/, .mcp.json, CLAUDE.md, .vscode/, .envrc and the like). A command that has to "
            "change one of those (git commit, git checkout) must run with dangerouslyDisableSandbox, which needs "
            "approval; add a path to sandbox.filesystem.allowWrite to allow writing elsewhere."
        )
    if _DENIED.search(output):
        mentioned = _mentioned(output, hidden.items())
        if mentioned:
            listed = "; ".join(f"{path} ({why})" for path, why in mentioned)
            found.append(f"Sandbox: these paths are hidden from commands: {listed}.")
    if truncated_hidden:
        found.append("Sandbox: Read deny rules matched too many files to hide them all; the first ones are hidden.")
    return found


def _mentioned(output: str, hidden: Iterable[tuple[Path, str]]) -> list[tuple[Path, str]]:
    return [(path, why) for path, why in hidden if str(path) in output or _names(output, path.name)]


def _names(output: str, name: str) -> bool:
    return (
        len(name) >= 3 and re.search(rf"(^|[\s/'\"`]){re.escape(name)}($|[\s/:'\"`])", output, re.MULTILINE) is not None
    )


def moved_aside_note(moved: Sequence[tuple[Path, Path]]) -> str:
    """What the model reads when its command created guarded entries, which were moved aside after it."""
    listed = "; ".join(str(where) for where, _ in moved)
    return (
        f"Sandbox: the command created {listed}. Programs outside the sandbox run or obey such files (git, editors, "
        "Claude Code), so a sandboxed command may not create them: they were moved out of the project (the server's "
        "log says where). To create one, run the command with dangerouslyDisableSandbox, which needs approval."
    )
