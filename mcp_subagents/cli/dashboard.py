"""`mcp-subagents dashboard` and `serve --dashboard`: the dashboard's server, beside a runtime that can resume
tasks and stop its own."""

from __future__ import annotations

import logging
import sys

import anyio

from ..config.settings import Settings
from ..core.errors import ConfigError
from ..runtime.request import TaskRequest
from ..runtime.service import Subagents
from ..serve.dashboard import Dashboard, Resumer, open_socket
from ..tasks.files import find_task
from ..tasks.transcripts import read_summary

logger = logging.getLogger(__name__)


def resumer(app: Subagents) -> Resumer:
    """Resume a task in `app`, for the principal who owns it (the dashboard is the operator's view of all); the new
    task's id is returned once its transcript exists."""

    async def resume(task_id: str, prompt: str) -> str:
        summary = read_summary(find_task(app.settings.state_dir, task_id))
        owner = summary.header.owner if summary is not None else ""
        arguments = TaskRequest(
            description="resumed from the dashboard", prompt=prompt, subagent_type="", resume=task_id
        )
        record = app.launch(arguments, principal=owner)
        await record.opened.wait()  # the page asks for the new task's transcript as soon as it has the answer
        return record.id

    return resume


async def serve_dashboard(app: Subagents, port: int) -> None:
    """Serve the dashboard of `app`'s state directory until cancelled; its address goes to stderr."""
    try:
        sock = open_socket(port)
    except OSError as exc:
        logger.error("dashboard: cannot listen on 127.0.0.1:%d: %s", port, exc.strerror or exc)
        return
    dashboard = Dashboard(
        app.settings.state_dir,
        port=sock.getsockname()[1],
        prices=app.prices.table(),
        stop_here=app.tasks.stop_own,
        resume=resumer(app),
    )
    print(
        f"mcp-subagents dashboard of {app.settings.state_dir} (every task, all principals):\n  {dashboard.access.url}",
        file=sys.stderr,
        flush=True,
    )
    await dashboard.serve(sock)


def dashboard_command(settings: Settings, port: int) -> int:
    async def main() -> None:
        app = Subagents(settings)
        async with app.running():
            await serve_dashboard(app, port)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        print("mcp-subagents: dashboard stopped", file=sys.stderr)
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 2
    return 0
