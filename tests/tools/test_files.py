from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import BUILTIN_TOOL_NAMES, builtin_tools
from mcp_subagents.tools.files import EMPTY_FILE_NOTE, MAX_UNPAGED_BYTES, WRITTEN_NOTE

from .conftest import CallTool

pytestmark = pytest.mark.anyio


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return path


# --- the tool set and its schemas ---------------------------------------------------------------


EXPECTED_PROPERTIES = {
    "Read": ["file_path", "offset", "limit", "pages", "allow_large"],
    "Write": ["file_path", "content"],
    "Edit": ["file_path", "old_string", "new_string", "replace_all"],
    "Glob": ["pattern", "path"],
    "Grep": [
        "pattern",
        "path",
        "glob",
        "output_mode",
        "-B",
        "-A",
        "-C",
        "context",
        "-n",
        "-i",
        "-o",
        "type",
        "head_limit",
        "offset",
        "multiline",
    ],
    "Bash": ["command", "timeout", "description", "run_in_background", "dangerouslyDisableSandbox"],
    "WebFetch": ["url", "prompt"],
    "TodoWrite": ["todos"],
}
EXPECTED_REQUIRED = {
    "Read": ["file_path"],
    "Write": ["file_path", "content"],
    "Edit": ["file_path", "old_string", "new_string"],
    "Glob": ["pattern"],
    "Grep": ["pattern"],
    "Bash": ["command"],
    "WebFetch": ["url", "prompt"],
    "TodoWrite": ["todos"],
}


def test_builtin_tools_come_in_the_contract_order() -> None:
    expected = ("Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite")
    assert BUILTIN_TOOL_NAMES == expected
    assert tuple(builtin_tools()) == expected
    assert all(name == tool.name for name, tool in builtin_tools().items())


def test_only_the_observing_tools_are_read_only() -> None:
    read_only = {name for name, tool in builtin_tools().items() if tool.read_only}
    assert read_only == {"Read", "Glob", "Grep", "WebFetch"}


@pytest.mark.parametrize("name", list(EXPECTED_PROPERTIES))
def test_schema_has_exactly_the_contract_fields(name: str) -> None:
    definition = builtin_tools()[name].definition()
    schema = definition.input_schema
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == EXPECTED_PROPERTIES[name]
    assert sorted(schema.get("required", [])) == sorted(EXPECTED_REQUIRED[name])
    assert len(definition.description) > 200


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("Read", {"file_path": "a", "bogus": 1}, "bogus"),
        ("Read", {"file_path": "a", "offset": -1}, "offset"),
        ("Read", {"file_path": "a", "limit": 0}, "limit"),
        ("Write", {"file_path": "a"}, "content"),
        ("Edit", {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "often"}, "replace_all"),
        ("Glob", {}, "pattern"),
        ("Grep", {"pattern": "x", "-B": "many"}, "-B"),
        ("Grep", {"pattern": "x", "output_mode": "lines"}, "output_mode"),
        ("Bash", {"command": "ls", "timeout": 600_001}, "timeout"),
        ("WebFetch", {"url": "https://example.com"}, "prompt"),
        ("TodoWrite", {"todos": [{"content": "a", "status": "done"}]}, "status"),
    ],
)
def test_invalid_arguments_name_the_field(name: str, arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolError) as caught:
        builtin_tools()[name].validate(arguments)
    assert f"'{field}'" in caught.value.message or f".{field}'" in caught.value.message


def test_grep_flags_are_read_by_their_dash_names() -> None:
    validated = builtin_tools()["Grep"].validate({"pattern": "x", "-B": 2, "-A": 3, "-C": 1, "-n": False, "-i": True})
    dumped = validated.model_dump(by_alias=True)
    assert (dumped["-B"], dumped["-A"], dumped["-C"], dumped["-n"], dumped["-i"]) == (2, 3, 1, False, True)


# --- Read ---------------------------------------------------------------------------------------


async def test_read_numbers_lines_as_claude_code_does(call: CallTool, workdir: Path) -> None:
    """No padding, and the empty line after a final line break is numbered too (Claude Code 2.1.328, captured)."""
    path = write(workdir / "a.txt", "first\n\tsecond\n")
    assert await call("Read", {"file_path": str(path)}) == "1\tfirst\n2\t\tsecond\n3\t"
    no_final_break = write(workdir / "b.txt", "one\ntwo")
    assert await call("Read", {"file_path": str(no_final_break)}) == "1\tone\n2\ttwo"


async def test_read_accepts_a_relative_path(call: CallTool, workdir: Path) -> None:
    write(workdir / "src" / "a.txt", "hello")
    assert await call("Read", {"file_path": "src/a.txt"}) == "1\thello"


async def test_read_with_offset_and_limit_shows_that_part_and_where_to_continue(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "a.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    result = await call("Read", {"file_path": str(path), "offset": 3, "limit": 2})
    assert result.startswith("3\tline 3\n4\tline 4\n")
    assert "Showing lines 3-4 of 11" in result
    assert "offset=5" in result


async def test_read_treats_offset_zero_as_the_first_line(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "a.txt", "one\ntwo\n")
    assert await call("Read", {"file_path": str(path), "offset": 0}) == "1\tone\n2\ttwo\n3\t"


async def test_read_shows_2000_lines_by_default(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "long.txt", "".join(f"{n}\n" for n in range(1, 2501)))
    result = await call("Read", {"file_path": str(path)})
    assert "\n2000\t2000\n" in result
    assert "\n2001\t" not in result
    assert "Showing lines 1-2000 of 2501" in result
    assert "offset=2001" in result


async def test_read_says_when_offset_is_past_the_end(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "a.txt", "one\ntwo\n")
    result = await call("Read", {"file_path": str(path), "offset": 5})
    assert "has 3 lines" in result


async def test_read_cuts_long_lines(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "wide.txt", "x" * 50_000 + "\nnext\n")
    result = await call("Read", {"file_path": str(path)})
    first, second, last = result.split("\n")
    assert first.startswith("1\t" + "x" * 2000 + "…")
    assert "line truncated" in first
    assert len(first) < 2100
    assert (second, last) == ("2\tnext", "3\t")


async def test_read_drops_carriage_returns_of_crlf_lines(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "dos.txt", "one\r\ntwo\r\n")
    assert await call("Read", {"file_path": str(path)}) == "1\tone\n2\ttwo\n3\t"


async def test_read_of_an_empty_file_says_it_is_empty(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "empty.txt", "")
    assert await call("Read", {"file_path": str(path)}) == EMPTY_FILE_NOTE


async def test_read_of_a_directory_suggests_glob_or_ls(call: CallTool, workdir: Path) -> None:
    (workdir / "folder").mkdir()
    with pytest.raises(ToolError) as caught:
        await call("Read", {"file_path": "folder"})
    assert "directory" in caught.value.message
    assert "Glob" in caught.value.message


async def test_read_refuses_binary_files_naming_type_and_size(call: CallTool, workdir: Path) -> None:
    (workdir / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(ToolError) as caught:
        await call("Read", {"file_path": "pic.png"})
    assert "binary" in caught.value.message
    assert "PNG image" in caught.value.message
    assert "108 bytes" in caught.value.message


async def test_read_refuses_undecodable_files(call: CallTool, workdir: Path) -> None:
    (workdir / "blob.dat").write_bytes(bytes(range(128, 256)) * 4)
    with pytest.raises(ToolError, match="binary"):
        await call("Read", {"file_path": "blob.dat"})


async def test_read_shows_mostly_text_files_with_a_few_bad_bytes(call: CallTool, workdir: Path) -> None:
    (workdir / "latin1.txt").write_bytes("The café on the corner serves crème brûlée every day.\n".encode("latin-1"))
    result = await call("Read", {"file_path": "latin1.txt"})
    assert result == "1\tThe caf\ufffd on the corner serves cr\ufffdme br\ufffdl\ufffde every day.\n2\t"


async def test_read_refuses_pdf_and_the_pages_parameter(call: CallTool, workdir: Path) -> None:
    (workdir / "doc.pdf").write_bytes(b"%PDF-1.7\n...")
    with pytest.raises(ToolError, match="PDF files is not supported"):
        await call("Read", {"file_path": "doc.pdf"})
    with pytest.raises(ToolError, match="pages parameter"):
        await call("Read", {"file_path": "doc.pdf", "pages": "1-2"})


async def test_read_of_a_missing_file_says_so_and_suggests_similar_names(call: CallTool, workdir: Path) -> None:
    write(workdir / "config.yaml", "a: 1\n")
    with pytest.raises(ToolError) as caught:
        await call("Read", {"file_path": "config.yml"})
    assert "does not exist" in caught.value.message
    assert str(workdir / "config.yaml") in caught.value.message


async def test_read_of_a_large_file_asks_for_offset_and_limit(call: CallTool, workdir: Path) -> None:
    path = write(workdir / "big.log", "0123456789\n" * (MAX_UNPAGED_BYTES // 11 + 100))
    with pytest.raises(ToolError) as caught:
        await call("Read", {"file_path": str(path)})
    assert "offset and limit" in caught.value.message
    assert (await call("Read", {"file_path": str(path), "limit": 3})).startswith("1\t0123456789\n")
    allowed = await call("Read", {"file_path": str(path), "allow_large": True})
    assert "Showing lines 1-2000 of" in allowed


async def test_read_refuses_a_fifo_without_blocking(call: CallTool, workdir: Path) -> None:
    os.mkfifo(workdir / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await call("Read", {"file_path": "pipe"})


@pytest.mark.parametrize("raw", ["../outside/secret.txt", "{outside}/secret.txt", "link.txt"])
async def test_read_stays_inside_the_working_directory(call: CallTool, workdir: Path, outside: Path, raw: str) -> None:
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the working directory"):
        await call("Read", {"file_path": raw.format(outside=outside)})


# --- Write --------------------------------------------------------------------------------------


async def test_write_creates_the_file_and_its_parents(call: CallTool, workdir: Path) -> None:
    result = await call("Write", {"file_path": "new/deep/file.txt", "content": "hello\r\nworld"})
    target = workdir / "new" / "deep" / "file.txt"
    # Claude Code's answer, and (in our words) its note that the model now holds the file as it is.
    assert result == f"File created successfully at: {target} {WRITTEN_NOTE}"
    assert target.read_bytes() == b"hello\r\nworld"


async def test_write_replaces_an_existing_file(call: CallTool, workdir: Path) -> None:
    target = write(workdir / "a.txt", "old content that is longer")
    result = await call("Write", {"file_path": str(target), "content": "new"})
    assert "has been updated" in result
    assert target.read_text(encoding="utf-8") == "new"


async def test_write_refuses_a_directory(call: CallTool, workdir: Path) -> None:
    (workdir / "folder").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await call("Write", {"file_path": "folder", "content": "x"})


async def test_write_refuses_lone_surrogates(call: CallTool, workdir: Path) -> None:
    with pytest.raises(ToolError, match="not valid Unicode"):
        await call("Write", {"file_path": "a.txt", "content": "bad \ud800"})
    assert not (workdir / "a.txt").exists()


@pytest.mark.parametrize(
    "raw", ["../outside/new.txt", "{outside}/new.txt", "linked-dir/new.txt", "dangling", "link.txt"]
)
async def test_write_stays_inside_the_working_directory(call: CallTool, workdir: Path, outside: Path, raw: str) -> None:
    (workdir / "linked-dir").symlink_to(outside, target_is_directory=True)
    (workdir / "dangling").symlink_to(outside / "dangling-target.txt")
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the working directory"):
        await call("Write", {"file_path": raw.format(outside=outside), "content": "pwned"})
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


# --- Edit ---------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_string_and_answers_as_claude_code(call: CallTool, workdir: Path) -> None:
    """Claude Code 2.1.328 answers an edit in one sentence, without a snippet of the file (captured)."""
    target = write(workdir / "app.py", "".join(f"line {n}\n" for n in range(1, 21)))
    result = await call("Edit", {"file_path": str(target), "old_string": "line 10\n", "new_string": "ten\nTEN\n"})
    assert result == f"The file {target} has been updated successfully."
    assert target.read_text(encoding="utf-8").count("line 10") == 0
    everywhere = {"file_path": str(target), "old_string": "line", "new_string": "row", "replace_all": True}
    every = await call("Edit", everywhere)
    assert every == f"The file {target} has been updated: all 19 occurrences were replaced."


async def test_edit_reports_a_missing_string(call: CallTool, workdir: Path) -> None:
    target = write(workdir / "a.txt", "alpha\n")
    with pytest.raises(ToolError, match="not found"):
        await call("Edit", {"file_path": str(target), "old_string": "beta", "new_string": "gamma"})


async def test_edit_refuses_identical_strings(call: CallTool, workdir: Path) -> None:
    target = write(workdir / "a.txt", "alpha\n")
    with pytest.raises(ToolError, match="exactly the same"):
        await call("Edit", {"file_path": str(target), "old_string": "alpha", "new_string": "alpha"})


async def test_edit_of_an_ambiguous_string_needs_replace_all(call: CallTool, workdir: Path) -> None:
    target = write(workdir / "a.txt", "x = 1\nx = 2\nx = 3\n")
    with pytest.raises(ToolError) as caught:
        await call("Edit", {"file_path": str(target), "old_string": "x =", "new_string": "y ="})
    assert "Found 3 matches" in caught.value.message
    assert "replace_all" in caught.value.message
    assert "context" in caught.value.message
    result = await call(
        "Edit", {"file_path": str(target), "old_string": "x =", "new_string": "y =", "replace_all": True}
    )
    assert "all 3 occurrences were replaced" in result
    assert target.read_text(encoding="utf-8") == "y = 1\ny = 2\ny = 3\n"


async def test_edit_of_a_missing_file_says_so(call: CallTool, workdir: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await call("Edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"})


async def test_edit_with_empty_old_string_creates_a_file(call: CallTool, workdir: Path) -> None:
    result = await call("Edit", {"file_path": "sub/new.txt", "old_string": "", "new_string": "fresh\n"})
    assert "created" in result
    assert (workdir / "sub" / "new.txt").read_text(encoding="utf-8") == "fresh\n"


async def test_edit_with_empty_old_string_fills_only_an_empty_file(call: CallTool, workdir: Path) -> None:
    write(workdir / "empty.txt", "")
    write(workdir / "full.txt", "content\n")
    assert "updated" in await call("Edit", {"file_path": "empty.txt", "old_string": "", "new_string": "now\n"})
    assert (workdir / "empty.txt").read_text(encoding="utf-8") == "now\n"
    with pytest.raises(ToolError, match="already exists"):
        await call("Edit", {"file_path": "full.txt", "old_string": "", "new_string": "x"})


async def test_edit_keeps_crlf_line_endings(call: CallTool, workdir: Path) -> None:
    target = write(workdir / "dos.txt", "one\r\ntwo\r\nthree\r\n")
    await call("Edit", {"file_path": str(target), "old_string": "one\ntwo", "new_string": "1\n2"})
    assert target.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_refuses_files_that_are_not_utf8(call: CallTool, workdir: Path) -> None:
    (workdir / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ToolError, match="not UTF-8"):
        await call("Edit", {"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"})


@pytest.mark.parametrize("raw", ["../outside/secret.txt", "{outside}/secret.txt", "link.txt", "linked-dir/secret.txt"])
async def test_edit_stays_inside_the_working_directory(call: CallTool, workdir: Path, outside: Path, raw: str) -> None:
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    (workdir / "linked-dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the working directory"):
        await call("Edit", {"file_path": raw.format(outside=outside), "old_string": "top", "new_string": "no"})
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"
