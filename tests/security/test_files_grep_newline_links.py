"""Grep leaves out hard-linked files (a hard link can reach a file outside the allowed area), also when the link's
name holds a newline.

Before, rg's content and count output was read line by line: a link named `notes\\nREADME.md` came out as a line
`./notes` and a line `README.md<NUL>the secret`, so Grep checked `README.md` (an ordinary file) for other links and
printed the linked file's content under that name. A directory named `--\\n...` given as the path, or a name ending
in a newline, did the same.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeLLM, tool_use, turn

from .server import make_scene, run_task, tool_results

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-CONTENT"


def _outside_secret(home: Path) -> Path:
    outside = home / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"first line\n{SECRET}\nlast line\n", encoding="utf-8")
    return secret


@pytest.mark.parametrize(
    ("link_name", "arguments"),
    [
        ("notes\nREADME.md", {"output_mode": "content"}),
        ("notes\n./README.md", {"output_mode": "content", "-C": 1}),
        ("notes\n", {"output_mode": "content", "-n": False}),
        ("a\n--\nREADME.md", {"output_mode": "content", "-C": 2}),
        ("notes\nREADME.md", {"output_mode": "count"}),
        ("--\nsub/README.md", {"output_mode": "content", "path": "--\nsub"}),
    ],
)
async def test_a_hard_link_whose_name_holds_a_newline_is_left_out(
    tmp_path: Path, fake: FakeLLM, link_name: str, arguments: dict[str, object]
) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    secret = _outside_secret(scene.home)
    for ordinary in ("README.md", "sub/README.md", "--\nsub/README.md", "--\nsub/other.md"):
        (scene.work / ordinary).parent.mkdir(parents=True, exist_ok=True)
        if ordinary != link_name:
            (scene.work / ordinary).write_text("an ordinary file\n", encoding="utf-8")
    link = scene.work / link_name
    link.parent.mkdir(parents=True, exist_ok=True)
    os.link(secret, link)
    grep = {"pattern": "SECRET|ordinary", **arguments}
    result, server = await run_task(scene, fake, turn(tool_use("Grep", grep)))
    await server.close()
    [seen] = tool_results(fake)
    assert SECRET not in seen
    assert "hard-linked file(s) skipped" in seen
    if arguments["output_mode"] == "count":
        assert ":2" not in seen  # the linked file's count (both of its marked lines) is not shown either
    assert "done" in result
