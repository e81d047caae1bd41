"""Replicas of a team's server as real subprocesses (`serve --transport streamable-http --database-url ...`), each
with its own home and state directory, all on the same project folder and the same fake Messages API."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from tests.fakes.fake_llm import FakeLLM
from tests.support import server_environment


@dataclass(slots=True)
class Log:
    """A replica's stderr as it comes."""

    chunks: list[str] = field(default_factory=lambda: [])
    grew: anyio.Event = field(default_factory=anyio.Event)

    def add(self, chunk: str) -> None:
        self.chunks.append(chunk)
        self.grew.set()
        self.grew = anyio.Event()

    def text(self) -> str:
        return "".join(self.chunks)

    async def wait_for(self, pattern: str, timeout_s: float = 60) -> re.Match[str]:
        with anyio.fail_after(timeout_s):
            while (found := re.search(pattern, self.text())) is None:
                await self.grew.wait()
        return found


@dataclass(slots=True)
class Replica:
    url: str
    process: Process
    log: Log

    def kill(self) -> None:
        """kill -9 of the replica and of every process it started (the machine is gone)."""
        os.killpg(self.process.pid, signal.SIGKILL)

    def seen(self, pattern: str) -> bool:
        return re.search(pattern, self.log.text()) is not None


@asynccontextmanager
async def replica(
    home: Path, project: Path, database_url: str, fake: FakeLLM, **variables: str
) -> AsyncGenerator[Replica]:
    """One replica; yields once it listens. Its stderr is kept in `log`."""
    home.mkdir(parents=True, exist_ok=True)
    environ = server_environment(home, fake=fake, work=project, sandbox="off")
    environ |= {"MCP_SUBAGENTS_DATABASE_URL": database_url, **variables}
    command = [sys.executable, "-m", "mcp_subagents", "serve", "--transport", "streamable-http", "--port", "0"]
    process = await anyio.open_process(
        command, env=environ, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    assert process.stderr is not None
    stderr = TextReceiveStream(process.stderr)
    log = Log()
    try:
        with anyio.fail_after(60):
            async for chunk in stderr:
                log.add(chunk)
                if match := re.search(r"listening \([\w-]+\) on (http://\S+)", log.text()):
                    break
            else:
                raise AssertionError(f"replica exited before listening:\n{log.text()}")
        async with anyio.create_task_group() as group:
            group.start_soon(_keep, stderr, log)
            yield Replica(match.group(1), process, log)
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            # SIGINT, as a person's Ctrl-C: the server ends the usual way (SIGTERM ends it with os._exit, which leaves
            # no coverage data from the subprocess behind).
            process.send_signal(signal.SIGINT)
            with anyio.move_on_after(20):
                await process.wait()
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


class Signal:
    """A named pipe a tool's command writes a line to when it gets somewhere: reading it waits for that moment."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path

    def command(self) -> str:
        return f"echo here > {self.path}"

    async def wait(self, timeout_s: float = 60) -> None:
        with anyio.fail_after(timeout_s):
            await anyio.to_thread.run_sync(self.path.read_text, abandon_on_cancel=True)


async def _keep(stream: TextReceiveStream, log: Log) -> None:
    async for chunk in stream:
        log.add(chunk)
