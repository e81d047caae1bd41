"""`mcp-subagents serve`: the runtime behind the MCP server on the chosen transport, until the end of stdin, a
SIGTERM or Ctrl-C; the dashboard and the catalog watcher beside it."""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, cast

import anyio

from ..config.settings import Settings
from ..core.errors import ConfigError
from ..core.processes import harden_server_process, kill_descendants
from ..mcp.notifications import watch_catalog
from ..mcp.server import build_server
from ..runtime.service import Subagents
from ..serve.early_answers import EarlyStart
from ..serve.transports import open_listener, serve

if TYPE_CHECKING:
    from .prescan import CatalogPrescan


def serve_command(settings: Settings, prescan: CatalogPrescan | None = None, early: EarlyStart | None = None) -> None:

    terminal = settings.transport == "stdio" and sys.stdin.isatty()

    async def main() -> None:
        app = Subagents(settings, catalog_prescan=prescan)
        async with app.running(), anyio.create_task_group() as group:
            server = build_server(app)
            group.start_soon(_stop_on_sigterm, group.cancel_scope)
            gc.freeze()  # what start-up built lives as long as the process: keep it out of full collections
            gc.enable()
            if settings.watch_interval > 0:
                watch = partial(
                    watch_catalog,
                    app.rescan,
                    server.notifier,
                    interval=settings.watch_interval,
                    baseline=app.catalog(),
                )
                group.start_soon(watch)
            if settings.dashboard:
                from .dashboard import serve_dashboard

                group.start_soon(serve_dashboard, app, settings.dashboard_port)
            await serve(server, settings, listener, early)
            group.cancel_scope.cancel()

    harden_server_process()
    try:
        listener = open_listener(settings)  # HTTP start-up checks and the port, before anything runs
        if terminal:  # a person started the server by hand: say what it waits for, and let Ctrl-C stop it
            from .terminal import SERVE_NOTICE

            print(SERVE_NOTICE, file=sys.stderr, flush=True)
        anyio.run(main)
    except (ConfigError, BaseExceptionGroup) as exc:
        config_error = _config_error(exc)
        if config_error is None:
            raise
        logging.getLogger("mcp_subagents").error("%s", config_error.message)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        if terminal:
            print("\nmcp-subagents: stopped", file=sys.stderr)
    finally:
        gc.enable()  # also when start-up failed before the freeze
        if prescan is not None:
            prescan.stop()
        kill_descendants()  # whatever a command detached was re-parented to this process: it goes with it
    if _terminated.is_set():
        # A host's SIGTERM: the runtime has shut down cleanly; end the process here, whatever else still waits.
        logging.shutdown()
        os._exit(0)


def _config_error(exc: BaseException) -> ConfigError | None:
    """The ConfigError in `exc`, also when task groups wrapped it, so it prints as one line."""
    if isinstance(exc, ConfigError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
            if (found := _config_error(inner)) is not None:
                return found
    return None


_terminated = threading.Event()


async def _stop_on_sigterm(scope: anyio.CancelScope) -> None:
    """SIGTERM (how hosts and service managers stop a server) shuts down as cleanly as the end of stdin."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            logging.getLogger("mcp_subagents").info("SIGTERM: shutting down")
            _terminated.set()
            scope.cancel()
            return
