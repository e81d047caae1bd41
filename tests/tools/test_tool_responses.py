"""The structured results PostToolUse hooks get (`tool_response`) are Claude Code's, field for field: each built-in
tool runs the calls Claude Code 2.1.328 ran in the capture (tests/agent/hooks/claude_code_tool_responses.json) on
the same files, and its structured result is compared with what Claude Code's hook received."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.tools import ToolContext, builtin_tools
from mcp_subagents.tools.base import structured_response
from mcp_subagents.tools.responses import structured_patch

pytestmark = pytest.mark.anyio

CAPTURE = Path(__file__).parent.parent / "agent" / "hooks" / "claude_code_tool_responses.json"
PROJECT_FILES = {
    "short.txt": "alpha\nbeta\n",
    "nonl.txt": "one\ntwo",
    "long.txt": "".join(f"line {i}\n" for i in range(1, 2101)),
    "empty.txt": "",
    "edit.txt": "hello world\nsecond\n",
    "crlf.txt": "a\r\nb\r\n",
    "wide.txt": "x" * 2500 + "\nshort\n",
}
"""The capture's project, as it was when the calls ran."""
OURS_ONLY_DIFFER = {"contentNotInModelContext"}
"""Edit's flag that the model never read the file: this server does not track what the model has read."""
CUT_IN_THE_CAPTURE = ("<proj>/long.txt", "<proj>/wide.txt")
"""Whole reads of these differ on purpose: this server shows 2000 lines and cuts lines at 2000 characters, Claude
Code 2.1.328 showed all 2101 lines and the 2500-character line whole (and the capture cuts their content)."""


def captured(tool: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(CAPTURE.read_text(encoding="utf-8"))["events"]
    return [e for e in events if e["tool_name"] == tool and e["hook_event_name"] == "PostToolUse"]


def in_project(value: Any, project: Path) -> Any:
    return json.loads(json.dumps(value).replace("<proj>", str(project)))


@pytest.fixture
def project(ctx: ToolContext) -> Path:
    for name, content in PROJECT_FILES.items():
        (ctx.cwd / name).write_bytes(content.encode())
    return ctx.cwd


async def response_of(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> Any:
    tool = builtin_tools()[name]
    build = structured_response(await tool.run(ctx, tool.validate(arguments)))
    assert build is not None, f"{name} gives no structured result"
    return build()


async def test_read_write_and_edit_answer_hooks_as_claude_code(ctx: ToolContext, project: Path) -> None:
    events = [e for tool in ("Read", "Write", "Edit") for e in captured(tool)]
    assert len(events) == 11
    for event in events:  # in the capture's order within each tool: Write and Edit change the files they read
        arguments = in_project(event["tool_input"], project)
        ours = await response_of(ctx, event["tool_name"], arguments)
        expected = in_project(event["tool_response"], project)
        if event["tool_input"].get("file_path") in CUT_IN_THE_CAPTURE and "offset" not in event["tool_input"]:
            assert ours["type"] == "text" and set(ours["file"]) == set(expected["file"]) - {"truncatedByTokenCap"}
            continue
        for flag in OURS_ONLY_DIFFER:
            expected.pop(flag, None)
        assert ours == expected, event["tool_input"]


async def test_bash_answers_hooks_with_its_output_as_stdout(ctx: ToolContext) -> None:
    [event] = captured("Bash")
    assert await response_of(ctx, "Bash", event["tool_input"]) == event["tool_response"]


async def test_glob_grep_and_todowrite_answer_with_claude_codes_fields(ctx: ToolContext) -> None:
    """This Claude Code build offers no Glob, Grep or TodoWrite to run against; the fields and types are those its
    package declares (sdk-tools.d.ts: GlobOutput, GrepOutput, TodoWriteOutput)."""
    (ctx.cwd / "a.py").write_text("secret = 1\nother\nsecret = 2\n", encoding="utf-8")
    (ctx.cwd / "b.py").write_text("nothing\n", encoding="utf-8")
    found = await response_of(ctx, "Glob", {"pattern": "*.py"})
    assert set(found) == {"durationMs", "numFiles", "filenames", "truncated"} and isinstance(found["durationMs"], int)
    assert (sorted(found["filenames"]), found["numFiles"], found["truncated"]) == (
        [str(ctx.cwd / "a.py"), str(ctx.cwd / "b.py")],
        2,
        False,
    )
    files = await response_of(ctx, "Grep", {"pattern": "secret"})
    assert files == {"mode": "files_with_matches", "numFiles": 1, "filenames": [str(ctx.cwd / "a.py")]}
    lines = await response_of(ctx, "Grep", {"pattern": "secret", "output_mode": "content", "-n": True})
    assert lines == {
        "mode": "content",
        "numFiles": 1,
        "filenames": [],
        "content": f"{ctx.cwd}/a.py:1:secret = 1\n{ctx.cwd}/a.py:3:secret = 2",
        "numLines": 2,
    }
    counted = await response_of(ctx, "Grep", {"pattern": "secret", "output_mode": "count"})
    assert counted == {"mode": "count", "numFiles": 1, "filenames": [], "content": f"{ctx.cwd}/a.py:2", "numMatches": 2}
    limited = await response_of(ctx, "Grep", {"pattern": "secret", "output_mode": "content", "head_limit": 1})
    assert (limited["numLines"], limited["appliedLimit"]) == (1, 1)
    nothing = await response_of(ctx, "Grep", {"pattern": "absent"})
    assert nothing == {"mode": "files_with_matches", "numFiles": 0, "filenames": []}
    todo = {"content": "a", "status": "pending", "activeForm": "doing a"}
    first = await response_of(ctx, "TodoWrite", {"todos": [todo]})
    assert first == {"oldTodos": [], "newTodos": [todo]}
    second = await response_of(ctx, "TodoWrite", {"todos": []})
    assert second == {"oldTodos": [todo], "newTodos": []}


def test_a_patch_keeps_three_lines_around_each_change_and_splits_far_changes() -> None:
    old = "".join(f"{n}\n" for n in range(1, 21))
    new = old.replace("2\n", "two\n", 1).replace("18\n", "eighteen\n")
    first, second = structured_patch(old, new)
    assert first == {
        "oldStart": 1,
        "oldLines": 5,
        "newStart": 1,
        "newLines": 5,
        "lines": [" 1", "-2", "+two", " 3", " 4", " 5"],
    }
    assert (second["oldStart"], second["oldLines"], second["lines"][3:5]) == (15, 6, ["-18", "+eighteen"])


async def test_without_a_hook_to_ask_write_does_not_read_the_file_it_replaces(ctx: ToolContext) -> None:
    """The run says whether a PostToolUse hook listens; reading the old text first is for that hook only."""
    target = ctx.cwd / "a.txt"
    target.write_text("old\n", encoding="utf-8")
    quiet = replace(ctx, tool_responses=False)
    response = await response_of(quiet, "Write", {"file_path": str(target), "content": "new\n"})
    assert (response["type"], response["originalFile"], response["structuredPatch"]) == ("update", None, [])
    assert target.read_text(encoding="utf-8") == "new\n"


def test_an_answer_travels_to_a_model_process_as_its_text() -> None:
    """Requests go to model processes pickled (`--model-processes`): an answer whose structured form is built by a
    closure failed to pickle there, and every TodoWrite or Write result broke the request."""
    import pickle

    from mcp_subagents.tools.base import ToolAnswer

    answer = ToolAnswer("The todo list is now empty.", lambda: {"oldTodos": [], "newTodos": []})
    copied = pickle.loads(pickle.dumps(answer))
    assert copied == "The todo list is now empty." and type(copied) is str
