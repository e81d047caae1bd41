"""Attacks on a server's control FIFO (`<state dir>/control/*.fifo`), which `tasks stop` and the dashboard write to:
only its owner may write, and whatever is written there stops nothing but the one task it names, validly."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest

from ..support import make_settings, running_app

pytestmark = pytest.mark.anyio


async def test_garbage_in_the_fifo_stops_nothing_and_a_valid_request_still_works(tmp_path: Path) -> None:
    waiting = {"victim": anyio.Event(), "sentinel": anyio.Event()}

    async def respond(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("Glob", {"pattern": "*"})
        waiting["victim" if "victim" in str(request.messages[0]) else "sentinel"].set()
        await anyio.sleep_forever()
        return text("never")

    settings = make_settings(tmp_path)
    async with running_app(settings, model=FunctionModel(respond)) as app:
        record = app.launch(TaskRequest(description="victim", prompt="victim", subagent_type="general-purpose"))
        sentinel = app.launch(TaskRequest(description="sentinel", prompt="other", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await waiting["victim"].wait()
            await waiting["sentinel"].wait()
        fifo = settings.state_dir / "control" / str(app.tasks.control_name)
        mode = fifo.stat().st_mode
        assert stat.S_ISFIFO(mode) and stat.S_IMODE(mode) == 0o600  # no other user can write
        assert stat.S_IMODE(fifo.parent.stat().st_mode) == 0o700
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        try:
            for line in (
                b"stop\n",
                b"stop ../../tasks/x\n",
                b"stop " + record.id[:8].encode() + b"\n",  # a prefix is not an id here
                b"kill " + record.id.encode() + b"\n",
                b"stop " + record.id.encode() + b" extra\n",
                b"\xff\xfe\x00 stop\n",
                b"x" * 5000,  # a request that never ends its line
                b"\n",
                b"stop 0123456789abcdef0123456789abcdef\n",  # no such task here
            ):
                os.write(fd, line)
            os.write(fd, b"\nstop " + sentinel.id.encode() + b"\n")  # read after all of the above, in order
            with anyio.fail_after(10):
                await sentinel.done.wait()
            assert sentinel.state == "stopped" and record.state == "running"
            os.write(fd, b"\nstop " + record.id.encode() + b"\n")
        finally:
            os.close(fd)
        with anyio.fail_after(10):
            await record.done.wait()
        assert record.state == "stopped"
    assert not fifo.exists()  # removed when the server stops
