"""Read, Write and Edit: the text-file tools."""

from __future__ import annotations

import codecs
import mimetypes
import os
import stat
from collections.abc import Callable, Iterator
from functools import partial
from itertools import islice
from pathlib import Path
from typing import BinaryIO

import anyio.from_thread
import anyio.to_thread
from pydantic import Field

from ..core.errors import ToolError
from .base import MAX_TOOL_RESULT_CHARS, Tool, ToolAnswer, ToolContext, ToolInput, lines_that_fit, tool_threads
from .paths import open_resolved, resolve_path
from .responses import edit_response, empty_read_response, read_response, write_response
from .text_lines import TextLines

DEFAULT_LINE_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_UNPAGED_BYTES = 256 * 1024
"""Larger files need offset/limit (or allow_large)."""
MAX_OUTPUT_CHARS = MAX_TOOL_RESULT_CHARS - 2_000
"""Budget of one Read result; reading stops early and says where to continue. Within what the loop passes on of one
answer, with room for that note: past it the loop would cut the listing mid-line and the note with it."""
BINARY_SNIFF_BYTES = 8192
MAX_COUNTED_REST_BYTES = 4 * 1024 * 1024
"""Up to this much after the lines shown, Read counts the remaining lines; beyond, it estimates them."""
ON_LOOP_BYTES = 1024 * 1024
"""Read and Edit work on a file up to this size, and Write writes up to this much, on the event loop (the whole
call, a few ms at most); larger ones run in a worker thread. With other subagents keeping the loop busy, handing
the work to a thread and back took from 30 ms to seconds; a large file on the loop could hold it as long (a 1 GiB
line is read to its end)."""
_LISTING_BATCH = 256

_UNDECODABLE_SHARE = 0.1
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
)
EMPTY_FILE_NOTE = "<system-reminder>Warning: this file exists, and it is empty.</system-reminder>"
"""Read's answer for an empty file: a note, not an error, as in Claude Code."""
_PDF_UNSUPPORTED = (
    "Reading PDF files is not supported by this server. "
    "If pdftotext is installed, run it with Bash (pdftotext FILE -) to get the text."
)


class ReadInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="1-based line number to start at; give it only for a file too long to read whole",
    )
    limit: int | None = Field(
        default=None,
        gt=0,
        description="How many lines to return; give it only for a file too long to read whole",
    )
    pages: str | None = Field(
        default=None,
        description="For PDFs only (such as '1-5'); this server cannot read PDFs, so leave it out.",
    )
    allow_large: bool = Field(
        default=False,
        description=f"Read the first {DEFAULT_LINE_LIMIT} lines of a file larger than "
        f"{MAX_UNPAGED_BYTES // 1024} KiB without giving offset/limit",
    )


READ_DESCRIPTION = f"""Reads a text file and returns its lines, numbered.

Usage:
- file_path should be an absolute path; a relative path is resolved against the working directory. Only files \
under the working directory (the allowed roots) can be read.
- By default it reads up to {DEFAULT_LINE_LIMIT} lines from the start of the file. To read part of a long file, \
pass offset (the 1-based line number to start from) and limit (the number of lines). When lines remain, the \
result ends with the offset to continue from.
- A file over {MAX_UNPAGED_BYTES // 1024} KiB is refused unless you page through it with offset and limit; Grep \
can search it instead, and allow_large=true reads its first {DEFAULT_LINE_LIMIT} lines anyway.
- Lines longer than {MAX_LINE_CHARS} characters are cut.
- Each line comes back as its number, a tab, then the line; a file that ends with a line break shows an empty \
last line. The number and the tab are not part of the file: never copy them into Edit's old_string.
- Only text files can be read: images, PDFs and other binary files are refused. It cannot read a directory: use \
Glob, or Bash with ls.
- You can read several files in parallel in one response; reading a file that may not exist is fine, the \
error says so."""


async def _run_read(ctx: ToolContext, args: ReadInput) -> str:
    if args.pages is not None:
        raise ToolError(f"The pages parameter is only for PDF files. {_PDF_UNSUPPORTED}")
    path = resolve_path(ctx, args.file_path, purpose="read")
    return await _on_loop_unless_large(partial(_read_file, ctx, path, args))


class _LargeForTheLoop(Exception):
    """The file is larger than work on the event loop may take on: do it in a worker thread."""


async def _on_loop_unless_large(work: Callable[..., str]) -> str:
    """`work(inline_limit=ON_LOOP_BYTES)` on the event loop; when it refuses (the file is larger), `work()` in a
    worker thread."""
    try:
        return work(inline_limit=ON_LOOP_BYTES)
    except _LargeForTheLoop:
        return await anyio.to_thread.run_sync(work, limiter=tool_threads())


def _read_file(ctx: ToolContext, path: Path, args: ReadInput, *, inline_limit: int | None = None) -> str:
    """Raises:
    _LargeForTheLoop: the file is larger than `inline_limit` (nothing was read).
    """
    fd = _open_existing(path, os.O_RDONLY, action="read")
    if fd is None:
        raise _missing_file(ctx, path)
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if inline_limit is not None and size > inline_limit:
            raise _LargeForTheLoop
        if size == 0:
            return ToolAnswer(EMPTY_FILE_NOTE, lambda: empty_read_response(str(path)))
        try:
            _refuse_binary(path, file.read(BINARY_SNIFF_BYTES), size)
            paged = args.offset is not None or args.limit is not None
            if size > MAX_UNPAGED_BYTES and not paged and not args.allow_large:
                raise ToolError(
                    f"File content ({_size(size)}) exceeds the maximum size that can be read at once "
                    f"({_size(MAX_UNPAGED_BYTES)}). Use offset and limit to read specific parts of the file, "
                    "or use Grep to search it for specific content."
                )
            file.seek(0)
            return _numbered_listing(path, file, start=max(args.offset or 1, 1), limit=args.limit)
        except OSError as exc:
            raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None


def _open_existing(path: Path, flags: int, *, action: str) -> int | None:
    """The file at `path` opened without following a symlink anywhere in it (see `open_resolved`), or None when
    nothing is there. Directories, special files and files with more than one hard link are refused, checked on what
    was opened, so nothing can be swapped in between."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
        fd = open_resolved(path, flags | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        raise _directory_error(path) from None
    except OSError as exc:
        raise ToolError(f"Could not access {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _directory_error(path)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{path} is not a regular file (a device, socket or pipe) and cannot be {action}.")
        if info.st_nlink > 1:
            raise ToolError(
                f"Path '{path}' is a file with {info.st_nlink} hard links. A hard link can reach a file outside the "
                "working directory, so file tools do not read or write files that have more than one link."
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _directory_error(path: Path) -> ToolError:
    return ToolError(f"{path} is a directory, not a file. Use Glob to find files in it, or Bash with ls to list it.")


def _numbered_listing(path: Path, file: BinaryIO, *, start: int, limit: int | None) -> str:
    max_lines = limit or DEFAULT_LINE_LIMIT
    lines = TextLines(file, max_chars=MAX_LINE_CHARS, check=_stop_if_cancelled)
    flowing = iter(lines)
    before = sum(1 for _ in islice(flowing, start - 1))
    window = _window(flowing, start=start, max_lines=max_lines)
    if not window:
        return (
            f"Warning: the file {path} has {before} lines, fewer than the requested offset {start}. "
            "Nothing to show; use a smaller offset."
        )
    shown = lines_that_fit(window[:max_lines], MAX_OUTPUT_CHARS) or 1  # the first line even when it is longer
    listing = "\n".join(window[:shown])
    if shown == len(window):
        return _read_answer(listing, path, window, start=start, total=before + shown)
    shown_last = start + shown - 1
    read = before + len(window)  # the lines handed out, shown or not: the rest of the file follows them
    in_all, total = _how_many_in_all(file, lines, read)
    more = f"To read more, call Read with offset={shown_last + 1}."
    text = f"{listing}\n\n(Showing lines {start}-{shown_last}{in_all}. {more})"
    return _read_answer(text, path, window[:shown], start=start, total=total)


def _read_answer(text: str, path: Path, numbered: list[str], *, start: int, total: int) -> ToolAnswer:
    """Read's answer; the lines without their numbers only when a hook asks for them."""

    def response() -> object:
        return read_response(str(path), [line.partition("\t")[2] for line in numbered], start=start, total=total)

    return ToolAnswer(text, response)


def _window(flowing: Iterator[str], *, start: int, max_lines: int) -> list[str]:
    """Up to `max_lines + 1` numbered lines (one more tells whether more follow), formatted a batch at a time, and
    no more batches once they exceed the output budget: a large `limit` over long lines holds little."""
    window: list[str] = []
    used = 0
    while len(window) <= max_lines and used <= MAX_OUTPUT_CHARS:
        batch = list(islice(flowing, min(_LISTING_BATCH, max_lines + 1 - len(window))))
        if not batch:
            break
        number = start + len(window)
        formatted = [
            f"{n}\t{text if len(text) <= MAX_LINE_CHARS else _cut(text)}" for n, text in enumerate(batch, start=number)
        ]
        window += formatted
        used += sum(map(len, formatted)) + len(formatted)
    return window


def _how_many_in_all(file: BinaryIO, lines: TextLines, lines_seen: int) -> tuple[str, int]:
    """How long the file is, said and as a number: its exact line count when the rest is small enough to count
    cheaply, else its size and an estimate from the lines seen so far (counting the rest of a huge file would cost
    more than the read)."""
    position = lines.position()
    size = os.fstat(file.fileno()).st_size
    if size - position <= MAX_COUNTED_REST_BYTES:
        total = lines_seen + lines.rest_line_count()
        return f" of {total}", total
    estimate = _two_significant_digits((size - position) * lines_seen / max(position, 1))
    return f"; about {estimate:,} more lines follow in this {_size(size)} file", lines_seen + estimate


def _two_significant_digits(value: float) -> int:
    digits = len(str(int(value)))
    return max(1, int(round(value, 2 - digits)) if digits > 2 else round(value))


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line truncated after {MAX_LINE_CHARS} characters]"


def _stop_if_cancelled() -> None:
    """In a worker thread: end a long read as soon as the call is cancelled (TaskStop), instead of finishing it."""
    try:
        anyio.from_thread.check_cancelled()
    except anyio.NoEventLoopError:  # not in a worker thread (a direct call): nothing to check
        pass


def _refuse_binary(path: Path, sample: bytes, size: int) -> None:
    if sample.startswith(b"%PDF-") or path.suffix.lower() == ".pdf":
        raise ToolError(f"{path} is a PDF document ({_size(size)}). {_PDF_UNSUPPORTED}")
    if not _looks_binary(sample):
        return
    kind = next((name for signature, name in _SIGNATURES if sample.startswith(signature)), None)
    kind = kind or mimetypes.guess_type(path.name)[0] or "binary data"
    raise ToolError(
        f"Cannot read {path}: it is a binary file ({kind}, {_size(size)}). Read shows text files only; "
        "inspect binary files with Bash (for example file or xxd | head)."
    )


def _looks_binary(sample: bytes) -> bool:
    if b"\0" in sample:
        return True
    decoded = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(sample, final=False)
    return decoded.count("\ufffd") > len(sample) * _UNDECODABLE_SHARE


def _missing_file(ctx: ToolContext, path: Path) -> ToolError:
    message = f"File does not exist: {path}."
    similar = _similar_paths(path)
    if similar:
        message += f" Did you mean {' or '.join(str(p) for p in similar)}?"
    return ToolError(f"{message} Current working directory: {ctx.cwd}")


def _similar_paths(path: Path, *, max_entries: int = 2000) -> list[Path]:
    try:
        with os.scandir(path.parent) as entries:
            names = [entry.name for _, entry in zip(range(max_entries), entries, strict=False)]
    except OSError:
        return []
    same_stem = [name for name in names if Path(name).stem == path.stem and name != path.name]
    import difflib  # only on a miss: keeps it off the start-up path

    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.7)
    ordered = list(dict.fromkeys([*same_stem, *close]))[:3]
    return [path.parent / name for name in ordered]


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


class WriteInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file to create or replace")
    content: str = Field(description="The file's full new text")


WRITTEN_NOTE = "(what you sent is now the file's whole content, so there is no need to Read it again)"
"""After Write's answer, as Claude Code adds its own: the model already holds the file as it now is."""

WRITE_DESCRIPTION = """Creates a file, or replaces one, with the content given.

Usage:
- This tool overwrites the existing file if there is one at the provided path, and creates missing parent \
directories.
- If this is an existing file, Read it first so you know what you are replacing. To change part of a file, \
prefer Edit, which sends only the change.
- Only paths under the working directory (the allowed roots) can be written.
- The content is written exactly as given, as UTF-8.
- Do not add documentation or README files (*.md) unless the task asks for them."""


async def _run_write(ctx: ToolContext, args: WriteInput) -> str:
    path = resolve_path(ctx, args.file_path, purpose="write")
    data = _encode(args.content, "content")
    original = _text_before_writing(path) if ctx.tool_responses else None
    if len(data) <= ON_LOOP_BYTES:
        existed = _write_file(path, data)
    else:
        existed = await anyio.to_thread.run_sync(partial(_write_file, path, data), limiter=tool_threads())
    said = f"The file {path} has been updated successfully." if existed else f"File created successfully at: {path}"
    content = args.content
    return ToolAnswer(f"{said} {WRITTEN_NOTE}", lambda: write_response(str(path), content, original, existed=existed))


def _text_before_writing(path: Path) -> str | None:
    """What the file held, for Write's structured result; None when there was none or it is not small UTF-8 text
    (the write itself decides what is an error)."""
    try:
        return _read_text_for_edit(path, inline_limit=ON_LOOP_BYTES)
    except (ToolError, _LargeForTheLoop):
        return None


def _write_file(path: Path, data: bytes) -> bool:
    """Whether the file was there before."""
    fd = _open_existing(path, os.O_WRONLY, action="written")
    existed = fd is not None
    try:
        if fd is None:
            fd = open_resolved(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode=0o666, make_parents=True)
        with os.fdopen(fd, "wb") as file:
            file.truncate(0)
            file.write(data)
    except OSError as exc:
        raise ToolError(f"Could not write {path}: {exc.strerror or exc}") from None
    return existed


def _encode(text: str, field_name: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"{field_name} is not valid Unicode text (it holds a lone surrogate).") from None


class EditInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file to change")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The replacement text; it must differ from old_string")
    replace_all: bool = Field(
        default=False, description="true changes every match of old_string, not just one (default false)"
    )


EDIT_DESCRIPTION = """Changes a file by replacing one exact piece of text with another.

Usage:
- Read the file first, so that old_string is copied from its current content.
- When copying text from Read output, keep the exact indentation (tabs/spaces) as it appears AFTER the line \
number prefix (the line number and a tab). Never include any part of that prefix in old_string or new_string.
- The edit FAILS if old_string is not found, or if it is found more than once and replace_all is false: then \
give a larger old_string with more surrounding context to make it unique, or set replace_all to true to \
change every occurrence (useful for renaming a variable).
- old_string and new_string must differ.
- An empty old_string creates a new file with new_string as its content (or fills an existing empty file).
- Files with CRLF line endings keep them; write old_string and new_string with plain newlines.
- Only files under the working directory (the allowed roots) can be edited."""


async def _run_edit(ctx: ToolContext, args: EditInput) -> str:
    path = resolve_path(ctx, args.file_path, purpose="write")
    if args.old_string == args.new_string:
        raise ToolError("No changes to make: old_string and new_string are exactly the same.")
    return await _on_loop_unless_large(partial(_edit_file, ctx, path, args))


def _edit_file(ctx: ToolContext, path: Path, args: EditInput, *, inline_limit: int | None = None) -> str:
    """Raises:
    _LargeForTheLoop: the file is larger than `inline_limit` (nothing was changed).
    """
    original = _read_text_for_edit(path, inline_limit=inline_limit)
    if original is None:
        if args.old_string:
            raise _missing_file(ctx, path)
        _write_file(path, _encode(args.new_string, "new_string"))
        return f"File created successfully at: {path}"
    if not args.old_string:
        if original:
            raise ToolError(
                f"Cannot create {path}: the file already exists and is not empty. Give old_string to change "
                "part of it, or use Write to replace it whole."
            )
        _write_file(path, _encode(args.new_string, "new_string"))
        return f"The file {path} has been updated (it was empty)."

    crlf = _uses_crlf(original)
    text = original.replace("\r\n", "\n") if crlf else original
    old = args.old_string.replace("\r\n", "\n") if crlf else args.old_string
    new = args.new_string.replace("\r\n", "\n") if crlf else args.new_string
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {path}. It has to be the file's text character for character, "
            "whitespace and indentation included; Read the file again and copy the text from it.\n"
            f"String: {_preview(args.old_string)}"
        )
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
            "occurrences, set replace_all to true. To replace only one occurrence, give more surrounding "
            "context in old_string so that it matches exactly once.\n"
            f"String: {_preview(args.old_string)}"
        )
    updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    _write_file(path, _encode(updated.replace("\n", "\r\n") if crlf else updated, "new_string"))
    if args.replace_all:
        said = f"The file {path} has been updated: all {count} occurrences were replaced."
    else:
        said = f"The file {path} has been updated successfully."
    return ToolAnswer(
        said,
        lambda: edit_response(
            str(path), args.old_string, args.new_string, original=text, updated=updated, replace_all=args.replace_all
        ),
    )


def _read_text_for_edit(path: Path, *, inline_limit: int | None = None) -> str | None:
    fd = _open_existing(path, os.O_RDONLY, action="edited")
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as file:
            if inline_limit is not None and os.fstat(file.fileno()).st_size > inline_limit:
                raise _LargeForTheLoop
            data = file.read()
    except OSError as exc:
        raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path} is not UTF-8 text ({_size(len(data))}); Edit only changes UTF-8 text files.") from None


def _uses_crlf(text: str) -> bool:
    return "\r\n" in text and text.count("\r\n") == text.count("\n")


def _preview(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


READ = Tool(name="Read", description=READ_DESCRIPTION, input_model=ReadInput, run=_run_read, read_only=True)
WRITE = Tool(name="Write", description=WRITE_DESCRIPTION, input_model=WriteInput, run=_run_write)
EDIT = Tool(name="Edit", description=EDIT_DESCRIPTION, input_model=EditInput, run=_run_edit)
