"""Which of a client's MCP roots may widen the subagents' allowed area.

On stdio the client is the person's own host, so its roots are trusted. Over HTTP a client could answer
`roots/list` with `file:///`; unless the server trusts client roots, only roots inside the working directory or
a configured `--allowed-root` folder are used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)


def _inside(folder: Path, areas: Iterable[Path]) -> bool:
    return any(folder == area or area in folder.parents for area in areas)


def confine_roots(roots: tuple[Path, ...], *, areas: Iterable[Path]) -> tuple[Path, ...]:
    """The roots that lie inside one of `areas`; the others are dropped and logged."""
    resolved = tuple(area.resolve() for area in areas)
    kept: list[Path] = []
    for root in roots:
        if _inside(root, resolved):
            kept.append(root)
        else:
            logger.warning(
                "ignoring the client's root %s: it is outside the working directory and the --allowed-root folders "
                "(--trust-client-roots would accept it)",
                root,
            )
    return tuple(kept)
