"""Grep: searching file contents with ripgrep."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..core.errors import ToolError
from .base import MAX_TOOL_RESULT_CHARS, Tool, ToolAnswer, ToolContext, ToolInput
from .grep_results import GrepResults, LinesByFile, SearchTarget
from .newest_first import NewestFirst
from .responses import grep_response
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
    pattern: str = Field(description="Regular expression to look for in the files' text (ripgrep syntax)")
    path: str | None = Field(
        default=None,
        description="File or folder to search (rg PATH); the working directory when left out.",
    )
    glob: str | None = Field(
        default=None,
        description='Search only files whose path matches this glob (rg --glob), such as "*.py" or "*.{ts,tsx}"',
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"content": the matching lines, where -A/-B/-C and -n apply; "files_with_matches" (the '
        'default): only the paths of files that match; "count": the number of matches in each file. head_limit '
        "applies to all three.",
    )
    before: int | None = Field(
        default=None,
        ge=0,
        alias="-B",
        description="Lines of context to print before each match (rg -B); content mode only.",
    )
    after: int | None = Field(
        default=None,
        ge=0,
        alias="-A",
        description="Lines of context to print after each match (rg -A); content mode only.",
    )
    around: int | None = Field(
        default=None,
        ge=0,
        alias="-C",
        description="Lines of context to print on both sides of each match (rg -C); content mode only.",
    )
    context: int | None = Field(default=None, ge=0, description="Same as -C.")
    line_numbers: bool = Field(
        default=True,
        alias="-n",
        description="Start each printed line with its line number (rg -n); content mode only. On by default.",
    )
    ignore_case: bool = Field(default=False, alias="-i", description="Match regardless of case (rg -i)")
    only_matching: bool = Field(
        default=False,
        alias="-o",
        description="Print just the part of each line that matched (rg -o); content mode only.",
    )
    type: str | None = Field(
        default=None,
        description="Search only files of this ripgrep type (rg --type), such as py, js, rust, go or java; "
        "quicker than a glob for the common languages.",
    )
    head_limit: int = Field(
        default=GREP_DEFAULT_HEAD_LIMIT,
        ge=0,
        description="Return at most N results, like `| head -N`: lines (content), paths (files_with_matches) or "
        f"per-file counts (count). Default {GREP_DEFAULT_HEAD_LIMIT}; 0 lifts the limit, which can flood your "
        "context.",
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="How many results to pass over before head_limit starts counting, like `| tail -n +N`; use "
        "it to page on. Default 0.",
    )
    multiline: bool = Field(
        default=False,
        description="Let a pattern span lines, with `.` matching line breaks too (rg -U --multiline-dotall). "
        "Default false.",
    )


GREP_DESCRIPTION = f"""Searches the contents of files with ripgrep.

Usage:
- Use it for every search of file contents; do not run `grep` or `rg` through Bash.
- The pattern is a regular expression in ripgrep's dialect, such as "log.*Error" or "def\\s+\\w+". Braces are \
special in it: to find `interface{{}}` in Go code, write `interface\\{{\\}}`.
- Choose which files to search with glob ("*.js", "**/*.tsx") or with a file type ("py", "rust").
- What comes back depends on output_mode: the matching lines ("content"), only the paths of matching files \
("files_with_matches", the default, newest first), or the number of matches per file ("count").
- Results are paginated: head_limit (default {GREP_DEFAULT_HEAD_LIMIT}, 0 = unlimited) and offset; a note says \
when more results exist. A page longer than one answer can hold ends early, with the offset to go on from.
- A pattern matches inside one line unless multiline is true: one that crosses lines, such as \
`struct \\{{[\\s\\S]*?field`, needs it.
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
    if completed.returncode not in (0, 1) and not completed.printed:
        raise ToolError(f"ripgrep failed (exit code {completed.returncode}): {completed.error_text()}")
    if completed.returncode == 1 or (not results.blocks and not results.files):
        nothing = "No files found" if args.output_mode == "files_with_matches" else "No matches found"
        return ToolAnswer(nothing, lambda: grep_response(args.output_mode, [], None))
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
    return ToolAnswer(text, lambda: _grep_response(args, results))


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


def _grep_response(args: GrepInput, results: GrepResults) -> object:
    """Claude Code's structured Grep result for the page shown."""
    stop = args.offset + args.head_limit if args.head_limit else None
    limit = args.head_limit if stop is not None and stop < results.total else None
    if results.files is not None:
        shown = results.files[args.offset : stop]
        return grep_response(args.output_mode, shown, None, limit=limit, offset=args.offset)
    page, _ = results.page(args.offset, stop, line_numbers=args.line_numbers, budget=GREP_PAGE_CHARS)
    counted = results.count_total() if args.output_mode == "count" else None
    mode, files = args.output_mode, len(results.blocks)
    return grep_response(mode, [], page, files=files, matches=counted, limit=limit, offset=args.offset)


GREP = Tool(name="Grep", description=GREP_DESCRIPTION, input_model=GrepInput, run=_run_grep, read_only=True)
