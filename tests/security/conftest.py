"""Shared pieces of the attack suite: a scratch directory outside /tmp, and the bubblewrap requirement."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_subagents.sandbox.platform import probe
from tests.team.conftest import database_url, postgres_url

__all__ = ["database_url", "postgres_url"]  # the team's Postgres, for the attacks on replicas

BWRAP = probe()
requires_bwrap = pytest.mark.skipif(not BWRAP.available, reason=f"the sandbox cannot run here: {BWRAP.reason}")
requires_socat = pytest.mark.skipif(BWRAP.socat is None, reason="socat is not installed (apt-get install socat)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def host_tmp() -> Iterator[Path]:
    """A scratch directory outside /tmp: inside the sandbox /tmp is private, so a test that wants to see what the
    sandbox does to a home directory or a folder beside the project must not put them under /tmp."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    folder = Path(tempfile.mkdtemp(prefix="mcp-subagents-test-", dir=base)).resolve()
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unique_marker() -> str:
    """Digits for a `sleep` argument no other process (nor an earlier run of the suite) uses."""
    return f"9{secrets.randbelow(10**7):07d}"


def running_with_marker(marker: str) -> list[int]:
    """Pids of live processes whose command line contains `marker` (a number no other process uses)."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                cmdline = file.read().replace(b"\0", b" ")
            with open(f"/proc/{name}/stat", "rb") as file:
                state = file.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found
