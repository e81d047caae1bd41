from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_llm import FakeLLM


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake LLM server, with an empty script and no recorded requests."""
    fake_server.reset()
    yield fake_server
    fake_server.reset()
