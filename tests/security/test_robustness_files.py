"""File tools under attack from the filesystem itself: a symlink swapped in by a background process, and file
names that are not UTF-8.

Before, Read read a file outside the working directory and Write planted one there whenever the swap landed
between the path check and the open; and a non-UTF-8 file name ended the task with UnicodeEncodeError.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, tool_use, turn

from .server import make_scene, run_task, tool_results

pytestmark = pytest.mark.anyio

ROUNDS = 150

# Swaps a directory and a symlink to the outside as fast as the kernel allows (renameat2 with RENAME_EXCHANGE,
# so both names always exist).
SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
while True:
    libc.syscall(316, -100, b"d", -100, b"link", 2)
"""


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="renameat2 syscall number")
async def test_a_symlink_swapped_in_after_the_check_is_never_followed(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE-SECRET\n")
    (scene.work / "d").mkdir()
    (scene.work / "d" / "f.txt").write_text("inside\n")
    (scene.work / "link").symlink_to(outside)
    reads = [tool_use("Read", {"file_path": "d/f.txt"}) for _ in range(ROUNDS)]
    writes = [tool_use("Write", {"file_path": "d/planted.txt", "content": "x"}) for _ in range(ROUNDS)]
    swapper = await anyio.open_process([sys.executable, "-c", SWAPPER, str(scene.work)])
    try:
        result, server = await run_task(scene, fake, turn(*reads), turn(*writes))
        await server.close()
    finally:
        swapper.kill()
        await swapper.wait()
    seen = tool_results(fake, 1) + tool_results(fake, 2)
    assert not [result for result in seen if "OUTSIDE-SECRET" in result]
    assert sorted(os.listdir(outside)) == ["f.txt"]  # nothing planted outside
    assert any("inside" in result for result in seen)  # the reads did run, and some landed inside
    assert "done" in result


async def test_file_names_that_are_not_utf8_never_end_a_task(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions")
    name = os.fsencode(scene.work) + b"/caf\xe9.txt"
    with open(name, "wb") as file:
        file.write(b"hello from a latin-1 name\n")
    steps = [
        turn(
            tool_use("Glob", {"pattern": "*"}),
            tool_use("Grep", {"pattern": "hello", "output_mode": "content"}),
            tool_use("Bash", {"command": "ls; printf 'caf\\351\\n'"}),
            tool_use("Read", {"file_path": "caf\ufffd.txt"}),  # the name as a model that saw U+FFFD would write it
        ),
        turn(tool_use("Read", {"file_path": "caf\\xe9.txt"})),  # the name as the tools print it
    ]
    result, server = await run_task(scene, fake, *steps)
    await server.close()
    globbed, grepped, listed, guessed = tool_results(fake, 1)
    [read] = tool_results(fake, 2)
    assert globbed.endswith("caf\\xe9.txt") and "caf\\xe9.txt:1:hello" in grepped
    assert "caf" in listed and "Did you mean" in guessed and "caf\\xe9.txt" in guessed
    assert "hello from a latin-1 name" in read
    assert "done" in result and "UnicodeEncodeError" not in result
    transcript = next(scene.state.rglob("*.jsonl")).read_bytes()
    transcript.decode("utf-8")  # still valid UTF-8 on disk
