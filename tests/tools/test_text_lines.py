"""Read's line reader (blocks decoded and split at once) against the plain definition of a file's lines: the same
lines, cut the same way, wherever the blocks end; and, after any number handed out, the same count of the rest."""

from __future__ import annotations

import io
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_subagents.tools import text_lines
from mcp_subagents.tools.text_lines import TextLines

MAX_CHARS = 5

pieces = st.sampled_from(["a", "bc", "\n", "\r\n", "é", "€", "😀", "\r", "x" * 9, "\n\n", "\udcff"])
"""Pieces of a file: line ends, multibyte characters that blocks can split, long runs, and an invalid byte
(`\\udcff`, written with surrogateescape)."""


def expected(data: bytes) -> list[str]:
    """Lines as `bytes.split` sees them (an empty last one after a final line break, none in an empty file), each
    decoded on its own, `\\r\\n` ends dropped, cut to MAX_CHARS + 1."""
    lines = data.split(b"\n") if data else []
    decoded = [line.decode("utf-8", errors="replace").removesuffix("\r") for line in lines]
    return [line[: MAX_CHARS + 1] for line in decoded]


@pytest.fixture(autouse=True)
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_lines, "FIRST_BLOCK_BYTES", 3)
    monkeypatch.setattr(text_lines, "LAST_BLOCK_BYTES", 7)


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=40), st.integers(min_value=0, max_value=50))
def test_the_lines_and_the_rest_match_the_plain_definition(parts: list[str], handed: int) -> None:
    data = "".join(parts).encode("utf-8", errors="surrogateescape")
    assert list(TextLines(io.BytesIO(data), max_chars=MAX_CHARS)) == expected(data)

    lines = TextLines(io.BytesIO(data), max_chars=MAX_CHARS)
    flowing = iter(lines)
    taken = list(islice(flowing, handed))
    assert taken == expected(data)[:handed]
    if len(taken) == handed:  # stopped before the end, as Read does
        assert lines.rest_line_count() == len(expected(data)) - handed


@pytest.mark.parametrize("handed", range(1, 40))
def test_the_position_of_the_rest_is_exact_for_utf8(handed: int) -> None:
    """Where Read's estimate of the rest starts: after the lines handed out, wherever the last block ended."""
    text = [f"é€ line {n} 😀\n" for n in range(40)]
    lines = TextLines(io.BytesIO("".join(text).encode()), max_chars=100)
    flowing = iter(lines)
    for _ in range(handed):
        next(flowing)
    assert lines.position() == len("".join(text[:handed]).encode())


@pytest.mark.parametrize("ending", ["\n", "\r\n", "x\r\n", "\r\r\n"])
def test_a_line_at_the_cut_is_judged_without_its_line_end(ending: str) -> None:
    data = ("a" * MAX_CHARS + ending + "next\n").encode()
    cut = ending.startswith("x") or ending == "\r\r\n"
    expected_first = "a" * MAX_CHARS + ("x" if ending.startswith("x") else "\r") if cut else "a" * MAX_CHARS
    assert list(TextLines(io.BytesIO(data), max_chars=MAX_CHARS)) == [expected_first, "next", ""]


def test_a_line_longer_than_the_cut_over_many_blocks_is_cut_and_the_next_one_is_whole() -> None:
    data = "y" * 10_000 + "\n" + "é" * 3 + "\r\n"
    assert list(TextLines(io.BytesIO(data.encode()), max_chars=MAX_CHARS)) == ["y" * (MAX_CHARS + 1), "ééé", ""]


def test_a_character_cut_off_by_the_end_of_the_file_still_makes_a_line() -> None:
    data = b"ok\n" + "€".encode()[:2]
    lines = TextLines(io.BytesIO(data), max_chars=MAX_CHARS)
    flowing = iter(lines)
    assert next(flowing) == "ok"
    assert lines.rest_line_count() == 1
    assert list(TextLines(io.BytesIO(data), max_chars=MAX_CHARS)) == ["ok", "\ufffd"]
