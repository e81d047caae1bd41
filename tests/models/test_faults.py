"""The fault policy both adapters share, run for each provider against the fake LLM: the real SDK over real HTTP."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from mcp_subagents.core.messages import TextPart
from tests.fakes.fake_llm import FakeLLM, error, hang, malformed, text, turn
from tests.models.adapters import ANTHROPIC, OPENAI, MakeModel, Provider

pytestmark = pytest.mark.anyio

OVERLOADED = {"type": "overloaded_error", "message": "Overloaded"}
FAST_RETRY = {"retry-after-ms": "1"}


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=lambda provider: provider.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param


async def test_overloaded_and_server_errors_are_retried(
    fake: FakeLLM, make_model: MakeModel, provider: Provider
) -> None:
    fake.push(error(529, headers=FAST_RETRY), error(500, headers=FAST_RETRY), turn(text("recovered")))

    response = await make_model(max_retries=2).request(provider.ask())

    assert response.parts == (TextPart(text="recovered"),)
    assert len(fake.requests) == 3


async def test_rate_limit_exhausted_raises_with_the_provider_message(
    fake: FakeLLM, make_model: MakeModel, provider: Provider
) -> None:
    fake.push(*[error(429, message="Rate limit reached for requests", headers=FAST_RETRY)] * 2)

    err = await provider.failure(make_model(max_retries=1))

    assert len(fake.requests) == 2
    assert err.status_code == 429
    assert err.retryable
    assert f"{provider.api} error 429 rate_limit_error: Rate limit reached for requests" in err.message
    assert "(request req_fake_" in err.message


async def test_mid_stream_error_is_retried(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(turn(text("partial answer"), stream_error=OVERLOADED), turn(text("full answer")))

    response = await make_model(max_retries=2).request(provider.ask())

    assert response.parts == (TextPart(text="full answer"),)
    assert len(fake.requests) == 2


async def test_mid_stream_error_exhausted_raises(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(*[turn(text("partial"), stream_error=OVERLOADED)] * 3)

    err = await provider.failure(make_model(max_retries=1))

    assert len(fake.requests) == 2
    assert err.retryable
    assert f"{provider.api} stream error overloaded_error: Overloaded" in err.message


async def test_authentication_error_is_clear_and_not_retried(
    fake: FakeLLM, make_model: MakeModel, provider: Provider
) -> None:
    fake.push(error(401, message=f"Incorrect API key provided: {provider.key}"), turn(text("never served")))

    err = await provider.failure(make_model(max_retries=2))

    assert len(fake.requests) == 1
    assert err.status_code == 401
    assert not err.retryable
    assert f"{provider.api} rejected the API key" in err.message
    assert f"Check {provider.key_variable}." in err.message
    assert "[redacted]" in err.message


async def test_connection_refused(make_model: MakeModel, provider: Provider) -> None:
    url = provider.unused_url()

    err = await provider.failure(make_model(base_url=url))

    assert err.retryable
    assert f"Could not connect to the {provider.api} at {url}" in err.message


@asynccontextmanager
async def _server_that_hangs_up() -> AsyncGenerator[str]:
    """A server that reads a request and closes the connection without a word: the base URL."""

    async def hang_up(stream: SocketStream) -> None:
        async with stream:
            await stream.receive()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, hang_up)
        yield f"http://127.0.0.1:{listener.listeners[0].extra(SocketAttribute.local_port)}"
        group.cancel_scope.cancel()


async def test_a_server_that_hangs_up_is_a_failed_connection_not_a_timeout(
    make_model: MakeModel, provider: Provider
) -> None:
    async with _server_that_hangs_up() as url:
        err = await provider.failure(make_model(base_url=url + provider.api_path))

    assert err.retryable
    assert f"Could not connect to the {provider.api} at {url}" in err.message
    assert "timed out" not in err.message


async def test_deadline_bounds_a_hanging_server(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(hang())
    started = time.monotonic()

    err = await provider.failure(make_model(deadline=0.5))

    assert 0.4 < time.monotonic() - started < 3
    assert err.retryable
    assert f"{provider.api} request timed out after 0.5 s" in err.message


async def test_deadline_bounds_a_stream_that_stalls(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(hang(after_start=True))

    err = await provider.failure(make_model(deadline=0.3))

    assert "timed out" in err.message


async def test_a_malformed_response_is_a_clear_error(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(malformed())

    err = await provider.failure(make_model())

    assert err.message.startswith(f"{provider.api} sent a stream that could not be parsed: Expecting value")
    assert len(fake.requests) == 1
