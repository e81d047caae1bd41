"""`mcp-subagents dashboard` and `serve --dashboard`: the dashboard's server, beside a runtime that can resume
tasks, and stop its own and answer their questions (other processes' tasks are reached through their control
channel). An answer given in the dashboard is recorded as given by the user who runs it, as `tasks answer` does."""

from __future__ import annotations

import errno
import logging
import socket
import sys

import anyio

from ..config.settings import Settings
from ..core.errors import ConfigError
from ..permissions.asking import Choice
from ..runtime.answers import Receipt
from ..runtime.request import TaskRequest
from ..runtime.service import Subagents
from ..serve.dashboard import VIA, Answerer, Dashboard, Resumer, Stopper, open_socket
from ..tasks.files import find_task
from ..tasks.transcripts import read_summary
from .tasks import os_user

logger = logging.getLogger(__name__)


def resumer(app: Subagents) -> Resumer:
    """Resume a task in `app`, for the principal who owns it (the dashboard is the operator's view of all); the new
    task's id is returned once its transcript exists."""

    async def resume(task_id: str, prompt: str) -> str:
        summary = read_summary(find_task(app.settings.state_dir, task_id))
        owner = summary.header.owner if summary is not None else ""
        arguments = TaskRequest(description="resumed from the dashboard", prompt=prompt, resume=task_id)
        record = app.launch(arguments, principal=owner)
        await record.opened.wait()  # the page asks for the new task's transcript as soon as it has the answer
        return record.id

    return resume


def answerer(app: Subagents, person: str) -> Answerer:
    """Answer the question of a task `app` runs, as `person`, via the dashboard; None for another process's task."""

    async def answer(task_id: str, question_id: str, choice: Choice) -> Receipt | None:
        record, team = app.tasks.live(task_id), app.tasks.team
        if record is None and team is not None:  # a team's task another replica runs: the answer goes there
            await team.refresh(task_id)
            record = team.elsewhere(task_id)
        if record is None:
            return None
        return await app.answers.answer(record, question_id, choice, by=person, via=VIA)

    return answer


def stopper(app: Subagents) -> Stopper:
    """Stop a task `app` runs; a team's replica sends the stop of any other task of the team to the team."""

    def stop(task_id: str) -> bool:
        if app.tasks.stop_own(task_id):
            return True
        team = app.tasks.team
        if team is None:
            return False
        app.tasks.in_background(team.request_stop, task_id, name=f"stop {task_id}")
        return True

    return stop


def dashboard_socket(port: int, flag: str = "--port") -> socket.socket:
    """The dashboard's listening socket on 127.0.0.1.

    Raises:
        ConfigError: the port is taken (or cannot be had), in one line that names `flag`.
    """
    try:
        return open_socket(port)
    except OSError as exc:
        hint = f"; is another dashboard running there? choose another {flag}" if exc.errno == errno.EADDRINUSE else ""
        raise ConfigError(f"dashboard: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}{hint}") from None


async def serve_dashboard(app: Subagents, port: int) -> None:
    """`serve --dashboard`: the dashboard beside the MCP server until cancelled. A port it cannot have is logged and
    the server goes on without it: a host's subagents matter more than the page."""
    try:
        sock = dashboard_socket(port, "--dashboard-port")
    except ConfigError as exc:
        logger.error("%s", exc.message)
        return
    await show_dashboard(app, sock)


async def show_dashboard(app: Subagents, sock: socket.socket) -> None:
    """Serve the dashboard of `app`'s state directory on `sock` until cancelled; its address goes to stderr."""
    person = os_user()
    dashboard = Dashboard(
        app.settings.state_dir,
        port=sock.getsockname()[1],
        person=person,
        prices=app.prices.table(),
        stop_here=stopper(app),
        answer_here=answerer(app, person),
        resume=resumer(app),
        stall_after=app.settings.stall_after,
    )
    team = app.tasks.team
    what = "the team's database" if team is not None else app.settings.state_dir
    print(
        f"mcp-subagents dashboard of {what} (every task, all principals):\n  {dashboard.access.url}",
        file=sys.stderr,
        flush=True,
    )
    async with anyio.create_task_group() as group:
        if team is not None:  # every replica's tasks, written here as they grow
            group.start_soon(team.keep_files)
        await dashboard.serve(sock)
        group.cancel_scope.cancel()


def dashboard_command(settings: Settings, port: int) -> int:
    """`mcp-subagents dashboard`: exits 2, before anything starts, when the port cannot be had."""

    async def main(sock: socket.socket) -> None:
        app = Subagents(settings)
        async with app.running():
            await show_dashboard(app, sock)

    try:
        anyio.run(main, dashboard_socket(port))
    except KeyboardInterrupt:
        print("mcp-subagents: dashboard stopped", file=sys.stderr)
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 2
    return 0
