"""Claude Code's structured results of the built-in tools: what its PostToolUse hooks get as `tool_response`
(field names and types as Claude Code 2.1.328 sends them, captured in
tests/agent/hooks/claude_code_tool_responses.json, and as its `sdk-tools.d.ts` declares them)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..core.json_values import JsonObject

PATCH_CONTEXT_LINES = 3
"""Unchanged lines around each change in a `structuredPatch` hunk, as in Claude Code (the `diff` package's
default)."""


def read_response(path: str, lines: Sequence[str], *, start: int, total: int) -> JsonObject:
    """Read of a text file: the lines shown (a cut line as shown), where they start and how many the file has."""
    file: JsonObject = {
        "filePath": path,
        "content": "\n".join(lines),
        "numLines": len(lines),
        "startLine": start,
        "totalLines": total,
    }
    return {"type": "text", "file": file}


def empty_read_response(path: str) -> JsonObject:
    """Read of an empty file: one empty line, as Claude Code counts it."""
    return read_response(path, [""], start=1, total=1)


def write_response(path: str, content: str, original: str | None, *, existed: bool) -> JsonObject:
    """Write: `create` when there was no file, else `update` with the change as hunks (none when what the file held
    is not known: `original` None)."""
    return {
        "type": "update" if existed else "create",
        "filePath": path,
        "content": content,
        "structuredPatch": [] if original is None else structured_patch(original, content),
        "originalFile": original,
        "userModified": False,
    }


def edit_response(path: str, old: str, new: str, *, original: str, updated: str, replace_all: bool) -> JsonObject:
    return {
        "filePath": path,
        "oldString": old,
        "newString": new,
        "originalFile": original,
        "structuredPatch": structured_patch(original, updated),
        "userModified": False,
        "replaceAll": replace_all,
    }


def bash_response(output: str, *, interrupted: bool = False) -> JsonObject:
    """A command that succeeded: Claude Code runs it with both streams merged, so all of it is `stdout`."""
    return {"stdout": output, "stderr": "", "interrupted": interrupted, "isImage": False, "noOutputExpected": False}


def grep_response(
    mode: str,
    filenames: list[str],
    content: str | None,
    *,
    files: int | None = None,
    matches: int | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> JsonObject:
    """Grep: the files found (files_with_matches), or the lines or counts shown (`content`) with how many files they
    came from; `limit` when head_limit cut the results, `offset` when the page does not start at the first."""
    response: JsonObject = {"mode": mode, "numFiles": len(filenames) if files is None else files}
    response["filenames"] = filenames
    if content is not None:
        response["content"] = content
        if matches is None:
            response["numLines"] = len(content.split("\n")) if content else 0
    if matches is not None:
        response["numMatches"] = matches
    if limit is not None:
        response["appliedLimit"] = limit
    if offset:
        response["appliedOffset"] = offset
    return response


def glob_response(filenames: list[str], *, truncated: bool, duration_ms: int) -> JsonObject:
    return {"durationMs": duration_ms, "numFiles": len(filenames), "filenames": filenames, "truncated": truncated}


def todo_response(old: list[JsonObject], new: list[JsonObject]) -> JsonObject:
    return {"oldTodos": old, "newTodos": new}


def structured_patch(old: str, new: str) -> list[JsonObject]:
    """The change from `old` to `new` as unified-diff hunks: lines without their line break, each marked ` `, `-`
    or `+`; starts 1-based."""
    before, after = _patch_lines(old), _patch_lines(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    hunks: list[JsonObject] = []
    for group in matcher.get_grouped_opcodes(PATCH_CONTEXT_LINES):
        lines: list[str] = []
        for tag, old_from, old_to, new_from, new_to in group:
            if tag == "equal":
                lines += [f" {line}" for line in before[old_from:old_to]]
                continue
            lines += [f"-{line}" for line in before[old_from:old_to]]
            lines += [f"+{line}" for line in after[new_from:new_to]]
        first, last = group[0], group[-1]
        hunks.append(
            {
                "oldStart": first[1] + 1,
                "oldLines": last[2] - first[1],
                "newStart": first[3] + 1,
                "newLines": last[4] - first[3],
                "lines": lines,
            }
        )
    return hunks


def _patch_lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines
