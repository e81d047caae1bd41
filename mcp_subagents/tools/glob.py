"""Glob: finding files by name, on top of ripgrep's file listing."""

from __future__ import annotations

import time

from pydantic import Field

from ..core.errors import ToolError
from ..core.glob_root import glob_root
from .base import Tool, ToolAnswer, ToolContext, ToolInput
from .glob_match import listing_matcher, may_match_hidden, ripgrep_name_filter
from .newest_first import NewestFirst
from .paths import resolve_path
from .responses import glob_response
from .ripgrep import SKIP_GIT_DIRECTORY, WALK_OPTIONS, WALK_OPTIONS_WITHOUT_HIDDEN, run_ripgrep, search_root

GLOB_MAX_RESULTS = 100


class GlobInput(ToolInput):
    pattern: str = Field(description="Glob pattern the file paths must match")
    path: str | None = Field(
        default=None,
        description="Folder to search; leave it out to search the working directory (do not pass 'undefined' or "
        "'null').",
    )


GLOB_DESCRIPTION = f"""Finds files by name with a glob pattern, quickly, in a codebase of any size.

- Takes patterns such as "**/*.js", "src/**/*.ts" or, with braces, "*.{{ts,tsx}}". `*` stays within one \
directory, `**` crosses directories; wildcards do not match names starting with a dot unless the pattern spells \
the dot (".github/**/*.yml").
- Returns absolute paths of matching files, most recently modified first, at most {GLOB_MAX_RESULTS}.
- Files ignored by .gitignore and the .git directory are skipped.
- Use this tool to find files by name. To search file contents use Grep. For an open-ended search that may \
take several rounds of globbing and grepping, plan the rounds and batch independent searches in one response."""


async def _run_glob(ctx: ToolContext, args: GlobInput) -> str:
    started = time.monotonic()
    text, found, truncated = await _glob(ctx, args)
    duration_ms = round((time.monotonic() - started) * 1000)
    return ToolAnswer(text, lambda: glob_response(found, truncated=truncated, duration_ms=duration_ms))


async def _glob(ctx: ToolContext, args: GlobInput) -> tuple[str, list[str], bool]:
    """What the model reads, the paths shown, and whether more matched than are shown."""
    base = search_root(ctx, args.path)
    if not base.is_dir():
        raise ToolError(f"{base} is not a directory. Give a directory as path, or put the file name in pattern.")
    if not args.pattern.strip():
        raise ToolError("The pattern is empty.")
    literal, rest = glob_root(args.pattern)
    root = resolve_path(ctx, str(base / literal), purpose="read") if literal else base
    if not rest:
        return (str(root), [str(root)], False) if root.is_file() else ("No files found", [], False)
    if not root.is_dir():
        return "No files found", [], False
    if may_match_hidden(rest):
        listing = ["--files", "--null", *WALK_OPTIONS, *ripgrep_name_filter(rest), *SKIP_GIT_DIRECTORY]
    else:  # rg skips hidden directories (and .git) itself, saving the walk and our matching of what they hold
        listing = ["--files", "--null", *WALK_OPTIONS_WITHOUT_HIDDEN, *ripgrep_name_filter(rest)]
    prefix = f"{str(root).rstrip('/')}/"
    found = NewestFirst(ctx, absolute=lambda paths: [prefix + path for path in paths], keep=listing_matcher(rest))
    completed = await run_ripgrep(ctx, listing, cwd=root, separator=b"\0", consumer=found)
    if completed.returncode == 2 and not completed.printed:
        raise ToolError(f"Listing files failed: {completed.error_text()}")
    matches = found.paths
    incomplete = (
        "\n(The directory holds too many files to list them all, so matches may be missing. Use a narrower path.)"
        if completed.stdout_overflowed
        else ""
    )
    if not matches:
        return f"No files found{incomplete}", [], completed.stdout_overflowed
    first = matches[:GLOB_MAX_RESULTS]
    shown = "\n".join(first)
    if len(matches) <= GLOB_MAX_RESULTS:
        return f"{shown}{incomplete}", first, completed.stdout_overflowed
    return (
        f"{shown}\n(Results are truncated: showing the {GLOB_MAX_RESULTS} most recently modified of "
        f"{len(matches)} matches. Use a more specific path or pattern.){incomplete}",
        first,
        True,
    )


GLOB = Tool(name="Glob", description=GLOB_DESCRIPTION, input_model=GlobInput, run=_run_glob, read_only=True)
