"""The Redactor finds a secret in every form it travels in."""

from __future__ import annotations

import base64
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from mcp_subagents.core.redaction import REDACTED, Redactor

SECRET = "sk-ant-redact-0123456789abcdef"


@pytest.mark.parametrize("prefix", [b"", b"u", b"us", b"user:"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_at_every_alignment_loses_the_secret(prefix: bytes, encode: Callable[[bytes], bytes]) -> None:
    encoded = encode(prefix + SECRET.encode() + b"!tail").decode()
    redacted = Redactor([SECRET])(f"Authorization: Basic {encoded}")
    assert REDACTED in redacted
    leftover = redacted.split("Basic ", 1)[1].replace(REDACTED, "")
    # What stays is the encoding of the neighbours and the two groups that mix them with the secret's first and last
    # one or two bytes: never the secret itself (30 bytes, 40 characters of base64).
    assert len(leftover) <= 24


@pytest.mark.parametrize(
    "form",
    [SECRET, quote(SECRET, safe=""), quote_plus(SECRET), SECRET.replace("-", "%2d"), SECRET.replace("a", "%61")],
)
def test_the_secret_and_any_percent_encoding_of_it_are_replaced(form: str) -> None:
    assert Redactor([SECRET])(f"?key={form}&x=1") == f"?key={REDACTED}&x=1"


def test_short_values_are_left_alone_and_text_without_secrets_is_unchanged() -> None:
    redact = Redactor(["abc", SECRET])
    assert redact("abc and more") == "abc and more"
    assert Redactor()("anything") == "anything"


def test_a_longer_secret_that_contains_a_shorter_one_is_replaced_whole() -> None:
    assert Redactor(["12345678", "12345678-and-more"])("x 12345678-and-more y") == f"x {REDACTED} y"
