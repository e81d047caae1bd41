"""The bubblewrap probe's answer is kept per process (the warm server's forks inherit it) only for what decided it:
the binary the settings or PATH lead to, as that file is; and a probe its server stopped leaves no process and
gives no answer. A fake `bwrap` stands in for bubblewrap: it notes each run, then answers as told."""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path

import pytest

from mcp_subagents.sandbox.platform import ProbeStop, ProbeStopped, probe
from tests.processes import is_running


def fake_bwrap(folder: Path, body: str) -> Path:
    """A `bwrap` in `folder` that appends its pid to `runs` beside it, then runs `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "bwrap"
    binary.write_text(f'#!/bin/sh\necho $$ >> "{folder / "runs"}"\n{body}\n', encoding="utf-8")
    binary.chmod(0o755)
    return binary


def runs(binary: Path) -> list[int]:
    noted = binary.parent / "runs"
    return [int(line) for line in noted.read_text().split()] if noted.exists() else []


def test_the_answer_is_kept_for_the_same_binary_and_found_again_when_path_leads_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    working = fake_bwrap(tmp_path / "works", "exit 0")
    failing = fake_bwrap(tmp_path / "fails", "echo 'no namespaces' >&2; exit 1")
    monkeypatch.setenv("PATH", f"{working.parent}:/usr/bin:/bin")
    assert probe().bwrap == str(working)
    assert probe().available and len(runs(working)) == 1  # the same binary: kept

    monkeypatch.setenv("PATH", f"{failing.parent}:/usr/bin:/bin")  # another host's PATH, another bubblewrap
    found = probe()
    assert not found.available and "no namespaces" in found.reason and len(runs(failing)) == 1

    monkeypatch.setenv("PATH", f"{working.parent}:/usr/bin:/bin")
    assert probe().available and len(runs(working)) == 1
    fake_bwrap(working.parent, "echo 'replaced' >&2; exit 1")  # the same path, another file
    assert "replaced" in probe().reason and len(runs(working)) == 2


def test_a_bwrap_path_in_the_settings_is_its_own_answer(tmp_path: Path) -> None:
    named = fake_bwrap(tmp_path / "named", "exit 0")
    assert probe(str(named)).bwrap == str(named)
    assert probe(str(tmp_path / "missing")).available is False
    assert len(runs(named)) == 1


def test_a_stopped_probe_leaves_no_process_and_no_answer(tmp_path: Path) -> None:
    started = tmp_path / "started"
    os.mkfifo(started)
    slow = fake_bwrap(tmp_path / "slow", f'echo $$ > "{started}"\nexec sleep 60')
    stop = ProbeStop()
    outcome: list[BaseException] = []

    def probing() -> None:
        try:
            probe(str(slow), stop=stop)
        except ProbeStopped as exc:
            outcome.append(exc)

    thread = threading.Thread(target=probing)
    thread.start()
    pid = first_line(started)
    stop.stop()
    thread.join(timeout=10)
    assert not thread.is_alive() and len(outcome) == 1  # stopped, not "the sandbox cannot run"
    assert not is_running(pid)
    with pytest.raises(ProbeStopped):
        probe(str(slow), stop=stop)  # a stopped server starts no other
    assert len(runs(slow)) == 1


def first_line(fifo: Path) -> int:
    """The pid the fake writes into `fifo` once it runs (at most 10 s)."""
    descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        readable, _, _ = select.select([descriptor], [], [], 10)
        assert readable, "the fake bwrap did not start"
        return int(os.read(descriptor, 64).split()[0])
    finally:
        os.close(descriptor)
