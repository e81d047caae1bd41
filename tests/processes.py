"""Checks on processes the tests started, without polling."""

from __future__ import annotations

import os
from pathlib import Path

import anyio


def is_running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except (FileNotFoundError, ProcessLookupError):  # reaped just now: the open or the read fails
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def wait_until_gone(pid: int) -> None:
    """Wait for `pid` to terminate, without polling: a pidfd becomes readable when its process exits."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(5):
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)
    assert not is_running(pid)
