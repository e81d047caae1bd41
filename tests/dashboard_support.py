"""A dashboard served on a real 127.0.0.1 port for the tests, over a state directory a real runtime writes; and a
task that waits on a permission question for it to answer."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2 as httpx
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_subagents.cli.dashboard import answerer, resumer
from mcp_subagents.core.messages import ToolResultMessage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.permissions.asking import OpenQuestion
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.serve.dashboard import Dashboard, open_socket
from mcp_subagents.tasks.record import TaskRecord
from tests.support import SYSTEM_PATH, server_environment

PERSON = "dashboard-tester"
"""Who the test dashboards say answered a question."""


@asynccontextmanager
async def served_dashboard(app: Subagents, *, here: bool = True) -> AsyncGenerator[Dashboard]:
    """The dashboard of `app`'s state directory; `here=False` makes it stop tasks and answer their questions through
    the control FIFO, as it does for tasks another process runs (the standalone `mcp-subagents dashboard`)."""
    sock = open_socket(0)
    dashboard = Dashboard(
        app.settings.state_dir,
        port=sock.getsockname()[1],
        person=PERSON,
        prices=app.prices.table(),
        stop_here=app.tasks.stop_own if here else None,
        answer_here=answerer(app, PERSON) if here else None,
        resume=resumer(app),
    )
    async with anyio.create_task_group() as group:
        group.start_soon(dashboard.serve, sock)
        yield dashboard
        group.cancel_scope.cancel()


@asynccontextmanager
async def standalone_dashboard(home: Path, *command: str) -> AsyncGenerator[httpx.AsyncClient]:
    """`mcp-subagents dashboard` (or another `command` that serves one) as its own process, over `home/state`; an
    API client that carries the secret it printed. The process gets SIGINT at the end and must exit 0."""
    environ = server_environment(home, work=home, path=os.environ.get("PATH", SYSTEM_PATH))
    args = command or ("dashboard",)
    process = await anyio.open_process([sys.executable, "-m", "mcp_subagents", *args], env=environ)
    assert process.stderr is not None and process.stdin is not None
    stderr = BufferedByteReceiveStream(process.stderr)
    try:
        with anyio.fail_after(30):
            while True:
                line = await stderr.receive_until(b"\n", 65536)
                if found := re.search(rb"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", line):
                    break
        port, token = int(found.group(1)), found.group(2).decode()
        headers = {"X-Dashboard-Token": token}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=10) as api:
            yield api
    finally:
        if args[0] == "serve":
            await process.stdin.aclose()  # a stdio server ends with its input
        else:
            process.send_signal(signal.SIGINT)
        with anyio.fail_after(20):
            await process.wait()
    assert process.returncode == 0


def base_url(dashboard: Dashboard) -> str:
    return f"http://127.0.0.1:{dashboard.access.port}"


def client(dashboard: Dashboard, *, with_token: bool = True) -> httpx.AsyncClient:
    headers = {"X-Dashboard-Token": dashboard.access.token} if with_token else {}
    return httpx.AsyncClient(base_url=base_url(dashboard), headers=headers, timeout=10)


def writing_model(project: Path) -> FunctionModel:
    """A model that writes `notes.txt` in `project` (a call the default mode asks about), then answers with what
    the Write call gave back."""

    async def respond(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if not isinstance(last, ToolResultMessage):
            return tool_call("Write", {"file_path": str(project / "notes.txt"), "content": "written\n"})
        return text(f"The Write call gave: {last.results[0].content}")

    return FunctionModel(respond)


async def asking_task(app: Subagents, description: str = "write the notes") -> tuple[TaskRecord, OpenQuestion]:
    """Launch a task of `writing_model` and return it once it waits on its question."""
    record = app.launch(
        TaskRequest(description=description, prompt="Write the notes.", subagent_type="general-purpose")
    )
    with anyio.fail_after(10):
        question = await app.tasks.root(record).resources.questions.wait_for_new()
    return record, question
