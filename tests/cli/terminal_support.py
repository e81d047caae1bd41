"""A program on a real pseudo-terminal for the CLI's terminal tests, and the environment `run` gets there."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.fakes.fake_llm import FakeLLM
from tests.support import SYSTEM_PATH, server_environment

CTRL_C = b"\x03"
CTRL_D = b"\x04"


class Terminal:
    """A program on a pseudo-terminal: stdin, stdout and stderr are the terminal, which is its controlling tty."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x00\x28\x00\xa0\x00\x00\x00\x00")  # 40 rows, 160 columns
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_subagents", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.screen = b""

    def read_until(self, wanted: bytes, timeout: float = 30) -> bytes:
        """What the terminal showed until `wanted` appeared (bounded: fails after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while wanted not in self.screen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{wanted!r} never appeared; the terminal showed:\n{self.screen.decode()}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the program exited and closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the program ended before {wanted!r}:\n{self.screen.decode()}")
                self.screen += chunk
        return self.screen

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self._drain()
            os.close(self.master)

    def _drain(self) -> None:
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.screen += chunk


def environment(tmp_path: Path, fake: FakeLLM, *, work: Path | None = None, **variables: str) -> dict[str, str]:
    """What `run` gets on the test's terminal: HOME and the state directory in `tmp_path`, the project in `work`
    (`tmp_path` unless given), the fake Messages API, then `variables`."""
    return (
        server_environment(
            tmp_path,
            fake=fake,
            work=work or tmp_path,
            path=os.environ.get("PATH", SYSTEM_PATH),
            TERM="xterm",
            MCP_SUBAGENTS_MODEL="claude-sonnet-4-6",
        )
        | variables
    )
