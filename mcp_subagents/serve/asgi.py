"""Running uvicorn inside our own task group, for the HTTP transports and the dashboard."""

from __future__ import annotations

import socket
from typing import Any, Literal

import anyio


async def serve_until_cancelled(
    app: Any,
    sock: socket.socket,
    *,
    grace_seconds: int,
    lifespan: Literal["on", "off"] = "on",
    force_exit: bool = False,
    **options: Any,
) -> None:
    """Serve `app` on the bound `sock` until our scope is cancelled, then let uvicorn shut down as it would on a
    signal (bounded by `grace_seconds`) rather than cutting it off mid-serve, which leaves its loop half torn down.
    `force_exit` skips waiting for open connections (for event streams, which never end by themselves)."""
    import uvicorn

    config = uvicorn.Config(
        app, log_level="warning", lifespan=lifespan, timeout_graceful_shutdown=grace_seconds, **options
    )
    server = uvicorn.Server(config)
    finished = anyio.Event()
    shield = anyio.CancelScope(shield=True)

    async def run() -> None:
        with shield:
            await server.serve(sockets=[sock])
        finished.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            await finished.wait()
        finally:
            server.should_exit = True
            server.force_exit = force_exit
            with anyio.CancelScope(shield=True), anyio.move_on_after(grace_seconds + 1):
                await finished.wait()
            shield.cancel()
