"""rg's output is consumed while rg runs: records cut across chunks arrive whole, the cap drops the record it cuts,
and Glob and Grep say when their listing was cut short."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from mcp_subagents.tools import ripgrep
from mcp_subagents.tools.record_stream import SLICE, RecordStream

from .conftest import CallTool, put

pytestmark = pytest.mark.anyio


class Collect:
    def __init__(self) -> None:
        self.records: list[str] = []
        self.finished = False

    def feed(self, records: list[str]) -> None:
        self.records += records

    def finish(self) -> None:
        self.finished = True


async def _run(stream: RecordStream, chunks: list[bytes]) -> None:
    for chunk in chunks:
        stream.add(chunk)
    stream.close()
    with anyio.fail_after(10):
        await stream.work()  # everything added before the close is fed, then the consumer is finished


async def test_records_cut_across_chunks_arrive_whole_and_in_order() -> None:
    collected = Collect()
    stream = RecordStream(b"\0", collected, cap=1024)
    await _run(stream, [b"src/a.py\0sr", b"c/b", b".py\0", b"c\xe9.py\0last-without-end"])
    assert collected.records == ["src/a.py", "src/b.py", "c\udce9.py", "last-without-end"]
    assert collected.finished and stream.printed and not stream.overflowed


async def test_the_cap_drops_the_record_it_cuts_and_everything_after() -> None:
    collected = Collect()
    stream = RecordStream(b"\n", collected, cap=12)
    await _run(stream, [b"one\ntwo\nthree\nfour\n"])
    assert collected.records == ["one", "two"]
    assert stream.overflowed


async def test_nothing_printed_is_nothing_fed() -> None:
    collected = Collect()
    stream = RecordStream(b"\n", collected, cap=10)
    await _run(stream, [])
    assert collected.records == [] and collected.finished and not stream.printed


async def test_glob_says_when_the_listing_was_cut_short(
    call: CallTool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(40):
        put(workdir, f"dir/file{number:02d}.txt", mtime=1_000_000 + number)
    monkeypatch.setattr(ripgrep, "MAX_RIPGREP_OUTPUT_BYTES", 200)
    result = await call("Glob", {"pattern": "**/*.txt"})
    shown = result.split("\n")
    assert "too many files to list them all" in shown[-1]
    listed = shown[:-1]
    assert 0 < len(listed) < 40
    assert all(line.startswith(str(workdir / "dir" / "file")) and line.endswith(".txt") for line in listed)


async def test_grep_says_when_its_output_was_cut_short(
    call: CallTool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(40):
        put(workdir, f"file{number:02d}.txt", "needle here\n")
    monkeypatch.setattr(ripgrep, "MAX_RIPGREP_OUTPUT_BYTES", 300)
    result = await call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    lines = result.split("\n")
    assert "the rest was dropped" in lines[-1]
    matches = [line for line in lines if line.startswith(str(workdir))]
    assert 0 < len(matches) < 40
    assert all(line.endswith(":1:needle here") for line in matches)


async def test_glob_lists_a_name_holding_a_newline_exactly(call: CallTool, workdir: Path) -> None:
    put(workdir, b"two\nlines.py", mtime=2_000_000)
    put(workdir, "plain.py", mtime=1_000_000)
    result = await call("Glob", {"pattern": "**/*.py"})
    assert result == f"{workdir}/two\nlines.py\n{workdir}/plain.py"


async def test_a_big_listing_is_fed_in_slices_that_let_other_tasks_run() -> None:
    """The stats run on the event loop: between slices, other tasks (other subagents) get their turn."""
    turns_between: list[int] = []
    ticks = 0

    class Counting(Collect):
        def feed(self, records: list[str]) -> None:
            turns_between.append(ticks)
            super().feed(records)

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    collected = Counting()
    stream = RecordStream(b"\0", collected, cap=1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await _run(stream, [b"".join(b"file%d\0" % number for number in range(4 * SLICE))])
        group.cancel_scope.cancel()
    assert len(collected.records) == 4 * SLICE
    assert len(turns_between) == 4 and len(set(turns_between)) == 4  # the ticker ran between every two slices
