"""The host's MCP roots: folders the user has shared with the server, added to the subagents' allowed area.

2025-era hosts are asked with a `roots/list` request on every Task call. 2026-era hosts cannot be sent requests: the
first Task call of a connection answers an `InputRequiredResult` carrying `roots/list`, and the folders the host
sends back are kept for the connection (that era has no notice of changed roots).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from weakref import WeakKeyDictionary

import anyio
import mcp_types as types
from mcp import MCPDeprecationWarning
from mcp.server import ServerRequestContext

from .host_connection import connection_key

logger = logging.getLogger(__name__)

ROOTS_REQUEST_SECONDS = 5.0
ROOTS_INPUT_KEY = "roots"
"""The key of the `roots/list` request inside an `InputRequiredResult`."""


async def host_roots(session: Any) -> tuple[Path, ...]:
    """Ask a 2025-era host for its roots: existing folders, resolved; none when it offers none or cannot answer."""
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


def roots_request() -> types.ListRootsRequest:
    return types.ListRootsRequest()


def roots_from_response(response: object) -> tuple[Path, ...]:
    """The folders of a host's answer to our `roots/list` input request; none for a missing or other answer."""
    if not isinstance(response, types.ListRootsResult):
        logger.info("the host answered the roots request with %s; going on without roots", type(response).__name__)
        return ()
    return existing_folders(str(root.uri) for root in response.roots)


class ConnectionRoots:
    """Roots of 2026-era connections, kept per connection where the transport has one (see `connection_key`)."""

    def __init__(self) -> None:
        self._by_connection: WeakKeyDictionary[object, tuple[Path, ...]] = WeakKeyDictionary()

    def known(self, ctx: ServerRequestContext[Any]) -> tuple[Path, ...] | None:
        key = connection_key(ctx)
        return None if key is None else self._by_connection.get(key)

    def remember(self, ctx: ServerRequestContext[Any], folders: tuple[Path, ...]) -> None:
        key = connection_key(ctx)
        if key is not None:
            self._by_connection[key] = folders


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
