"""Grep: searching file contents with ripgrep."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.errors import ToolError
from .base import MAX_TOOL_RESULT_CHARS, Tool, ToolContext, ToolInput
from .grep_results import GrepResults, LinesByFile, SearchTarget
from .newest_first import NewestFirst
from .ripgrep import (
    MAX_RIPGREP_OUTPUT_BYTES,
    SKIP_GIT_DIRECTORY,
    WALK_OPTIONS,
    run_ripgrep,
    search_root,
)

GREP_DEFAULT_HEAD_LIMIT = 250
GREP_MAX_COLUMNS = 500
GREP_PAGE_CHARS = MAX_TOOL_RESULT_CHARS - 2_000
"""The most a page of results holds, so that with its notes it is passed on whole: a page that would be longer ends
at the last whole entry that fits, with the offset to go on from, rather than be cut mid-line by the loop."""


OutputMode = Literal["content", "files_with_matches", "count"]


class GrepInput(ToolInput):
    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | None = Field(
        default=None,
        description="File or directory to search in (rg PATH). Defaults to the current working directory.",
    )
    glob: str | None = Field(
        default=None,
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line numbers, '
        'head_limit), "files_with_matches" shows file paths (supports head_limit), "count" shows match counts '
        '(supports head_limit). Defaults to "files_with_matches".',
    )
    before: int | None = Field(
        default=None,
        ge=0,
        alias="-B",
        description='Number of lines to show before each match (rg -B). Requires output_mode: "content".',
    )
    after: int | None = Field(
        default=None,
        ge=0,
        alias="-A",
        description='Number of lines to show after each match (rg -A). Requires output_mode: "content".',
    )
    around: int | None = Field(
        default=None,
        ge=0,
        alias="-C",
        description='Number of lines to show before and after each match (rg -C). Requires output_mode: "content".',
    )
    context: int | None = Field(default=None, ge=0, description="Same as -C.")
    line_numbers: bool = Field(
        default=True,
        alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content". Defaults to true.',
    )
    ignore_case: bool = Field(default=False, alias="-i", description="Case insensitive search (rg -i)")
    only_matching: bool = Field(
        default=False,
        alias="-o",
        description='Print only the matched parts of lines (rg -o). Requires output_mode: "content".',
    )
    type: str | None = Field(
        default=None,
        description="File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient "
        "than glob for standard file types.",
    )
    head_limit: int = Field(
        default=GREP_DEFAULT_HEAD_LIMIT,
        ge=0,
        description="Limit output to the first N lines/entries, like `| head -N`: lines in content mode, file "
        f"paths in files_with_matches mode, entries in count mode. Defaults to {GREP_DEFAULT_HEAD_LIMIT}; "
        "0 means unlimited (use sparingly).",
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="Skip the first N lines/entries before applying head_limit, like `| tail -n +N | head -N`. "
        "Defaults to 0.",
    )
    multiline: bool = Field(
        default=False,
        description="Enable multiline mode where . matches newlines and patterns can span lines "
        "(rg -U --multiline-dotall). Default: false.",
    )


GREP_DESCRIPTION = f"""A powerful search tool built on ripgrep.

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
- Supports full regex syntax (e.g. "log.*Error", "function\\s+\\w+"). Ripgrep syntax, not grep: literal braces \
need escaping (use `interface\\{{\\}}` to find `interface{{}}` in Go code).
- Filter files with glob (e.g. "*.js", "**/*.tsx") or type (e.g. "js", "py", "rust").
- Output modes: "content" shows matching lines, "files_with_matches" shows only file paths (default, most \
recently modified first), "count" shows match counts per file.
- Results are paginated: head_limit (default {GREP_DEFAULT_HEAD_LIMIT}, 0 = unlimited) and offset; a note says \
when more results exist. A page longer than one answer can hold ends early, with the offset to go on from.
- Patterns match within single lines by default. For patterns that span lines, like `struct \\{{[\\s\\S]*?field`, \
use multiline: true.
- Hidden files are searched; files ignored by .gitignore and the .git directory are not. Lines longer than \
{GREP_MAX_COLUMNS} characters are shortened.
- For an open-ended search that may need several rounds, batch independent searches in one response."""


async def _run_grep(ctx: ToolContext, args: GrepInput) -> str:
    target = SearchTarget.of(search_root(ctx, args.path), ctx.cwd)
    arguments = [*WALK_OPTIONS, *_grep_options(args), *SKIP_GIT_DIRECTORY, "-e", args.pattern, "--", target.argument]
    if args.output_mode == "files_with_matches":
        files = NewestFirst(ctx, absolute=target.absolute_all, skip_hard_links=True)
        completed = await run_ripgrep(ctx, arguments, cwd=ctx.cwd, separator=b"\0", consumer=files)
        results = GrepResults([], files.skipped, files=files.paths)
    else:
        counting = args.output_mode == "count"
        lines = LinesByFile(ctx, target, context_lines=_asks_for_context(args), counting=counting)
        completed = await run_ripgrep(ctx, arguments, cwd=ctx.cwd, separator=b"\n", consumer=lines)
        results = lines.results
    if completed.returncode == 1:
        return "No files found" if args.output_mode == "files_with_matches" else "No matches found"
    if completed.returncode not in (0, 1) and not completed.printed:
        raise ToolError(f"ripgrep failed (exit code {completed.returncode}): {completed.error_text()}")
    if not results.blocks and not results.files:
        return "No files found" if args.output_mode == "files_with_matches" else "No matches found"
    text = _render_grep(args, results)  # on the loop: under load a worker thread waits long for the interpreter
    if results.skipped:
        text += (
            f"\n({len(results.skipped)} hard-linked file(s) skipped: a hard link can reach a file outside the "
            "allowed area.)"
        )
    if completed.stdout_overflowed:
        text += f"\n(ripgrep printed more than {MAX_RIPGREP_OUTPUT_BYTES // (1024 * 1024)} MiB; the rest was dropped.)"
    if completed.returncode == 2:
        text += f"\n(ripgrep reported errors: {completed.error_text()[:1000]})"
    return text


def _asks_for_context(args: GrepInput) -> bool:
    around = args.context if args.context is not None else args.around
    return bool(around) if around is not None else bool(args.before or args.after)


def _grep_options(args: GrepInput) -> list[str]:
    options = ["--null", "--max-columns", str(GREP_MAX_COLUMNS), "--max-columns-preview"]
    if args.multiline:
        options += ["--multiline", "--multiline-dotall"]
    if args.ignore_case:
        options.append("--ignore-case")
    if args.type:
        options += ["--type", args.type]
    for glob in _split_globs(args.glob):
        options += ["--glob", glob]
    if args.output_mode == "files_with_matches":
        return [*options, "--files-with-matches"]
    if args.output_mode == "count":
        return [*options, "--count", "--with-filename"]
    options += ["--no-heading", "--with-filename"]
    if args.line_numbers:
        options.append("--line-number")
    if args.only_matching:
        options.append("--only-matching")
    around = args.context if args.context is not None else args.around
    if around is not None:
        options += ["--context", str(around)]
    else:
        if args.before is not None:
            options += ["--before-context", str(args.before)]
        if args.after is not None:
            options += ["--after-context", str(args.after)]
    return options


def _split_globs(raw: str | None) -> list[str]:
    """`"*.ts *.tsx"` and `"*.ts,*.tsx"` both mean two globs; a brace pattern stays whole."""
    globs: list[str] = []
    for part in (raw or "").split():
        globs += [part] if "{" in part else [piece for piece in part.split(",") if piece]
    return globs


def _render_grep(args: GrepInput, results: GrepResults) -> str:
    total = results.total
    stop = args.offset + args.head_limit if args.head_limit else None
    body, shown = results.page(args.offset, stop, line_numbers=args.line_numbers, budget=GREP_PAGE_CHARS)
    if not shown:
        return f"No results at offset {args.offset}: there are only {total}."
    asked = total - args.offset if stop is None else min(stop, total) - args.offset
    if args.output_mode == "files_with_matches":
        noun = "file" if total == 1 else "files"
        body = f"Found {total} {noun}\n{body}"
    elif args.output_mode == "count":
        files = "file" if total == 1 else "files"
        body += f"\n\nFound {results.count_total()} matching lines across {total} {files}."
    if args.offset == 0 and shown == total:
        return body
    first, last = args.offset + 1, args.offset + shown
    why = f" More would not fit in one answer ({GREP_PAGE_CHARS} characters)." if shown < asked else ""
    more = f" Use offset={last} to see more." if last < total else ""
    return f"{body}\n\n(Showing results {first}-{last} of {total}.{why}{more})"


GREP = Tool(name="Grep", description=GREP_DESCRIPTION, input_model=GrepInput, run=_run_grep, read_only=True)
