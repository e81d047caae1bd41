"""Read of the start of a long file: what it says about the rest without reading all of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from mcp_subagents.tools.base import MAX_TOOL_RESULT_CHARS
from mcp_subagents.tools.files import MAX_COUNTED_REST_BYTES, MAX_OUTPUT_CHARS, ON_LOOP_BYTES

from .conftest import CallTool

pytestmark = pytest.mark.anyio

LINE_BYTES = 10


def numbered_file(path: Path, lines: int) -> Path:
    """`lines` lines of exactly LINE_BYTES bytes each: the line number, zero-padded."""
    path.write_bytes(b"".join(b"%09d\n" % n for n in range(1, lines + 1)))
    return path


async def test_a_rest_small_enough_to_count_gives_the_exact_line_count(call: CallTool, workdir: Path) -> None:
    lines = MAX_COUNTED_REST_BYTES // LINE_BYTES + 1000  # the rest after line 1000 is just under the limit
    path = numbered_file(workdir / "counted.log", lines)
    result = await call("Read", {"file_path": str(path), "limit": 1000})
    # Every line ends with a line break, so the empty line after the last one counts, as in Claude Code.
    assert result.endswith(f"(Showing lines 1-1000 of {lines + 1}. To read more, call Read with offset=1001.)")


async def test_a_huge_rest_is_estimated_and_the_size_given(call: CallTool, workdir: Path) -> None:
    lines = 2 * MAX_COUNTED_REST_BYTES // LINE_BYTES
    path = numbered_file(workdir / "huge.log", lines)
    result = await call("Read", {"file_path": str(path), "limit": 2000})
    assert "\n2000\t000002000\n" in result
    assert "\n2001\t" not in result
    assert result.endswith(
        "(Showing lines 1-2000; about 840,000 more lines follow in this 8.0 MiB file. "
        "To read more, call Read with offset=2001.)"
    )
    assert f"{lines}" not in result  # not counted


async def test_the_estimate_follows_the_line_lengths_seen(call: CallTool, workdir: Path) -> None:
    path = workdir / "wide.log"
    path.write_bytes((b"y" * 999 + b"\n") * (MAX_COUNTED_REST_BYTES // 1000 + 1000))  # 5194 lines of 1000 bytes
    result = await call("Read", {"file_path": str(path), "limit": 5})
    assert "; about 5,200 more lines follow in this 5.0 MiB file." in result


async def test_an_offset_deep_into_a_huge_file_still_continues_truthfully(call: CallTool, workdir: Path) -> None:
    lines = 2 * MAX_COUNTED_REST_BYTES // LINE_BYTES
    path = numbered_file(workdir / "huge.log", lines)
    result = await call("Read", {"file_path": str(path), "offset": lines - 2, "limit": 10})
    assert result == f"{lines - 2}\t{lines - 2:09d}\n{lines - 1}\t{lines - 1:09d}\n{lines}\t{lines:09d}\n{lines + 1}\t"
    tail = await call("Read", {"file_path": str(path), "offset": lines - 20, "limit": 10})
    assert tail.endswith(
        f"(Showing lines {lines - 20}-{lines - 11} of {lines + 1}. To read more, call Read with offset={lines - 10}.)"
    )


async def test_a_read_cut_by_the_output_budget_still_counts_every_line(call: CallTool, workdir: Path) -> None:
    path = workdir / "wide.log"
    path.write_bytes(b"".join(b"%04d" % n + b"w" * 995 + b"\n" for n in range(1, 3001)))  # 3000 lines, 3 MB
    result = await call("Read", {"file_path": str(path), "limit": 2000})
    listing, note = result.split("\n\n(Showing lines 1-")
    shown = len(listing.splitlines())
    assert 10 < shown < 2000  # the output budget, not the limit, ended the listing
    assert note == f"{shown} of 3001. To read more, call Read with offset={shown + 1}.)"
    assert len(result) <= MAX_OUTPUT_CHARS + 200
    assert len(result) <= MAX_TOOL_RESULT_CHARS, "the loop would cut the listing and its note"


async def test_small_files_are_read_and_written_on_the_event_loop_and_large_ones_in_a_thread(
    call: CallTool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small Read, Edit or Write does all its work on the loop: with other subagents keeping the loop busy, the
    hand-over to a worker thread and back took 30 ms to seconds. A larger file still goes to a thread, so one file
    with a huge line cannot hold the loop (tests/security/test_robustness_starvation.py)."""
    handed: list[object] = []
    run_sync = anyio.to_thread.run_sync

    async def spy(func: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(func)
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", spy)
    small = numbered_file(workdir / "small.log", ON_LOOP_BYTES // LINE_BYTES)
    assert small.stat().st_size == ON_LOOP_BYTES - ON_LOOP_BYTES % LINE_BYTES
    assert (await call("Read", {"file_path": str(small), "limit": 3})).startswith("1\t000000001\n")
    assert handed == []
    large = numbered_file(workdir / "large.log", ON_LOOP_BYTES // LINE_BYTES + 1)
    assert (await call("Read", {"file_path": str(large), "limit": 3})).startswith("1\t000000001\n")
    assert len(handed) == 1

    # Edit and Write the same way: by the size of the file, and of what is written.
    assert "updated successfully" in await call(
        "Edit", {"file_path": str(small), "old_string": "000000002\n", "new_string": "second\n"}
    )
    assert "has been updated" in await call("Write", {"file_path": str(small), "content": "x" * ON_LOOP_BYTES})
    assert len(handed) == 1
    assert "updated successfully" in await call(
        "Edit", {"file_path": str(large), "old_string": "000000002\n", "new_string": "second\n"}
    )
    assert "has been updated" in await call("Write", {"file_path": str(small), "content": "y" * (ON_LOOP_BYTES + 1)})
    assert len(handed) == 3
    assert large.read_bytes().startswith(b"000000001\nsecond\n000000003\n")
    assert small.read_bytes() == b"y" * (ON_LOOP_BYTES + 1)
