"""Fuzzing the Authorization header: only `Bearer <a configured token>` ever gets in, and nothing else makes the
server fail (a 5xx, a crash) or answer differently from a plain 401."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import given, settings
from hypothesis import strategies as st

from .http_harness import ALICE_TOKEN, BOB_TOKEN, Served, http_settings, serving, token_file

VALID = {ALICE_TOKEN.encode(), BOB_TOKEN.encode()}
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}'
)
HEADER_BYTES = bytes([0x09, *range(0x20, 0x7F), *range(0x80, 0x100)])
"""What HTTP/1.1 lets a header value carry."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    configured = http_settings(
        folder, "streamable-http", auth_token_file=token_file(folder, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    )
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(serving(configured)) as running:
        yield running


@pytest.fixture(scope="module")
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=10) as client:
        yield client


def _header_bytes(max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(HEADER_BYTES), max_size=max_size).map(bytes)


def _near_misses() -> st.SearchStrategy[bytes]:
    token = st.sampled_from(sorted(VALID))
    scheme = st.sampled_from([b"Bearer", b"bearer", b"BEARER", b"Basic", b"Bearer:", b"Token", b""])
    separator = st.sampled_from([b" ", b"  ", b"\t", b"", b"=", b" Bearer "])
    mutated = st.one_of(
        token,
        token.map(lambda t: t[:-1]),
        token.map(lambda t: t[1:]),
        token.map(lambda t: t.swapcase()),
        st.tuples(token, _header_bytes(4)).map(lambda pair: pair[0] + pair[1]),
        st.tuples(_header_bytes(4), token).map(lambda pair: pair[0] + pair[1]),
        st.tuples(token, token).map(lambda pair: pair[0] + b"," + pair[1]),
    )
    return st.tuples(scheme, separator, mutated).map(lambda parts: b"".join(parts))


def _sendable(value: bytes) -> bytes:
    return value.strip(b" \t")


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(_near_misses(), _header_bytes(200)).map(_sendable))
def test_only_a_configured_bearer_token_gets_in(served: Served, http: httpx2.Client, value: bytes) -> None:
    accepted = value[:7].lower() == b"bearer " and value[7:] in VALID
    response = http.post(
        served.url,
        content=INITIALIZE,
        headers=[
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"authorization", value),
        ],
    )
    if accepted:
        assert response.status_code == 200
    else:
        assert response.status_code == 401
        assert response.json() == {"error": "invalid_token", "error_description": "Authentication required"}
