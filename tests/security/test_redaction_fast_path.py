"""Attack on the Redactor's substring pre-check: text that carries a secret in some form must never take the fast
way out. The pre-check skips the pattern only when neither `%` nor (for a secret with a space) `+` is in the text
and no literal form is; these tests build texts from the secret's every form and compare with the pattern itself."""

from __future__ import annotations

import base64
import random
import re
from urllib.parse import quote, quote_plus

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_subagents.core.redaction import REDACTED, Redactor

SECRETS = ["sk-ant-api03-abcdefgh", "pass word with spaces", "p%2Bss+word!", "ünïcode-sécret"]


def _forms(secret: str, chooser: random.Random) -> list[str]:
    data = secret.encode()
    mixed = "".join(
        quote(char, safe="") if chooser.random() < 0.5 else char for char in secret
    )  # some characters escaped, the rest not
    return [
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        re.sub("%[0-9A-F]{2}", lambda escape: escape.group().lower(), quote(secret, safe="")),
        mixed,
        base64.b64encode(b"user:" + data).decode(),
        base64.urlsafe_b64encode(b"xy" + data + b"tail").decode(),
    ]


def _pattern_only(redactor: Redactor, text: str) -> str:
    pattern: re.Pattern[str] | None = redactor._pattern  # pyright: ignore[reportPrivateUsage]
    return text if pattern is None else pattern.sub(REDACTED, text)


@settings(max_examples=400)
@given(
    secret=st.sampled_from(SECRETS) | st.text(min_size=8, max_size=24),
    padding=st.lists(st.text(max_size=30), min_size=2, max_size=2),
    which=st.integers(min_value=0, max_value=6),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_the_fast_path_answers_as_the_pattern_does(secret: str, padding: list[str], which: int, seed: int) -> None:
    redactor = Redactor([secret])
    forms = _forms(secret, random.Random(seed))
    text = padding[0] + forms[which] + padding[1]
    assert redactor(text) == _pattern_only(redactor, text)


def test_every_form_in_a_long_line_is_caught() -> None:
    filler = "x" * 50_000
    for secret in SECRETS:
        redactor = Redactor([secret])
        for form in _forms(secret, random.Random(0)):
            text = f"{filler} {form} {filler}"
            assert REDACTED in redactor(text), (secret, form)


def test_text_without_any_form_comes_back_unchanged() -> None:
    redactor = Redactor(SECRETS)
    line = '{"type": "message", "content": "100% done, a+b"}' * 20
    assert redactor(line) == line
