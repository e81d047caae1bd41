"""Telling connected hosts that the tool list changed (an agent file was added, edited or removed).

Each protocol era has its own path: 2025-era sessions get `notifications/tools/list_changed` on their connection;
2026-era clients receive it on their `subscriptions/listen` stream through the subscription bus.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged

from ..definitions import Catalog

logger = logging.getLogger(__name__)


class ToolListNotifier:
    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._sessions: set[Any] = set()

    async def track_sessions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: remember each 2025-era session when it initializes (the 2026 era has no initialize)."""
        result = await call_next(ctx)
        if ctx.method == "initialize":
            session = ctx.session
            self._sessions.add(session)
            # The SDK has no public close hook; without one, a closed session is dropped when a send fails.
            exit_stack = getattr(getattr(session, "_connection", None), "exit_stack", None)
            if exit_stack is not None:
                exit_stack.callback(self._sessions.discard, session)
        return result

    async def notify(self) -> None:
        await self.bus.publish(ToolsListChanged())
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:
                self._sessions.discard(session)


def catalog_signature(catalog: Catalog) -> tuple[tuple[str, str, str], ...]:
    """What the Task tool's schema and description are made of."""
    return catalog.listing()


async def watch_catalog(
    rescan: Callable[[], Catalog], notifier: ToolListNotifier, *, interval: float, baseline: Catalog | None = None
) -> None:
    """Poll the agent definitions and notify hosts on a change from `baseline` (what hosts were listed; by default
    a first scan). `rescan` (a stat per file, thanks to the loader's cache) runs in a worker thread: with thousands
    of agent files a scan takes tens of milliseconds."""
    previous = catalog_signature(baseline or await anyio.to_thread.run_sync(rescan))
    while True:
        await anyio.sleep(interval)
        current = catalog_signature(await anyio.to_thread.run_sync(rescan))
        if current != previous:
            previous = current
            logger.info("agent definitions changed; telling hosts to list tools again")
            await notifier.notify()
