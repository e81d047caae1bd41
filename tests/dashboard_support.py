"""A dashboard served on a real 127.0.0.1 port for the tests, over a state directory a real runtime writes."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import httpx2 as httpx

from mcp_subagents.cli.dashboard import resumer
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.serve.dashboard import Dashboard, open_socket


@asynccontextmanager
async def served_dashboard(app: Subagents, *, stop_here: bool = True) -> AsyncGenerator[Dashboard]:
    """The dashboard of `app`'s state directory; `stop_here=False` makes it stop tasks through the control FIFO,
    as it does for tasks another process runs."""
    sock = open_socket(0)
    dashboard = Dashboard(
        app.settings.state_dir,
        port=sock.getsockname()[1],
        prices=app.prices.table(),
        stop_here=app.tasks.stop_own if stop_here else None,
        resume=resumer(app),
    )
    async with anyio.create_task_group() as group:
        group.start_soon(dashboard.serve, sock)
        yield dashboard
        group.cancel_scope.cancel()


def base_url(dashboard: Dashboard) -> str:
    return f"http://127.0.0.1:{dashboard.access.port}"


def client(dashboard: Dashboard, *, with_token: bool = True) -> httpx.AsyncClient:
    headers = {"X-Dashboard-Token": dashboard.access.token} if with_token else {}
    return httpx.AsyncClient(base_url=base_url(dashboard), headers=headers, timeout=10)
