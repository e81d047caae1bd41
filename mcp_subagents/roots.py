"""The host's MCP roots: folders the user has shared with the server, added to the subagents' allowed area."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp import MCPDeprecationWarning

logger = logging.getLogger(__name__)

ROOTS_REQUEST_SECONDS = 5.0


async def host_roots(session: Any) -> tuple[Path, ...]:
    """Existing root folders, resolved; none when the host offers no roots or cannot be asked (2026-era sessions)."""
    try:
        if not session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
            return ()
        with warnings.catch_warnings():  # roots are deprecated in the 2026 era; 2025-era hosts still offer them
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            asking = session.list_roots()
        with anyio.fail_after(ROOTS_REQUEST_SECONDS):
            result: types.ListRootsResult = await asking
    except Exception as exc:  # a host that cannot answer must not fail the Task
        logger.debug("no MCP roots from the host: %s", exc)
        return ()
    return existing_folders(str(root.uri) for root in result.roots)


def existing_folders(uris: Iterable[str]) -> tuple[Path, ...]:
    folders: list[Path] = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            continue
        folder = Path(unquote(parsed.path)).resolve()
        if folder.is_dir() and folder not in folders:
            folders.append(folder)
    return tuple(folders)
