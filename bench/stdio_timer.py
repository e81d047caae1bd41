"""A relay between a host and a stdio MCP server that notes when the server answered. As the server's command:

    python bench/stdio_timer.py LOG COMMAND...

starts COMMAND, passes the host's lines to it and its lines back unchanged, and when the server has answered
`tools/list` appends one JSON line to LOG: `first_answer_s` and `tools_list_s`, seconds from the server's spawn to
its first answer (`initialize`, or `server/discover` in the 2026-07-28 era) and to its first `tools/list` answer.
SIGINT and SIGTERM are passed on to the server. Standard library only, so that the relay starts in milliseconds.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import IO, Any


class Timer:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.spawned = time.perf_counter()
        self.first_answer: float | None = None
        self.tools_list_ids: set[Any] = set()
        self.written = False

    def request(self, line: bytes) -> None:
        if b'"tools/list"' in line:
            message = json.loads(line)
            if message.get("method") == "tools/list":
                self.tools_list_ids.add(message.get("id"))

    def answer(self, line: bytes) -> None:
        now = time.perf_counter() - self.spawned
        if b'"result"' not in line and b'"error"' not in line:
            return  # a notification or a request of the server's
        if self.first_answer is None:
            self.first_answer = now
        if not self.written and self.tools_list_ids and json.loads(line).get("id") in self.tools_list_ids:
            self.written = True
            with self.log.open("a", encoding="utf-8") as file:
                file.write(json.dumps({"first_answer_s": self.first_answer, "tools_list_s": now}) + "\n")


def pass_requests(timer: Timer, server_stdin: IO[bytes]) -> None:
    try:
        for line in sys.stdin.buffer:
            timer.request(line)
            server_stdin.write(line)
            server_stdin.flush()
        server_stdin.close()
    except (BrokenPipeError, ValueError):  # the server has exited
        pass


def main(log: Path, command: list[str]) -> int:
    timer = Timer(log)
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None

    def pass_signal(signum: int, frame: FrameType | None) -> None:
        server.send_signal(signum)

    signal.signal(signal.SIGINT, pass_signal)
    signal.signal(signal.SIGTERM, pass_signal)
    threading.Thread(target=pass_requests, args=(timer, server.stdin), daemon=True).start()
    for line in server.stdout:
        timer.answer(line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return server.wait()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
