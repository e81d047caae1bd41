"""The Anthropic adapter sends each request through the SDK client's HTTP client, as the request the SDK builds
once (`anthropic_send`): what reaches the API must be exactly what `client.post` sends, and clients whose requests
the SDK would change per request keep `client.post`."""

from __future__ import annotations

import gzip
import re
from typing import Any

import anthropic
import httpx2
import pytest

from mcp_subagents.core.messages import TextPart
from mcp_subagents.models.anthropic import AnthropicModel
from mcp_subagents.models.anthropic_send import request_template
from tests.fakes.fake_llm import FakeLLM, Json, Raw, anthropic_stream_bytes, error, raw, text, turn
from tests.models.adapters import ANTHROPIC, MakeModel, Provider

pytestmark = pytest.mark.anyio

# Differ between any two requests, whichever path sends them.
PER_REQUEST = {"x-stainless-retry-count"}


@pytest.fixture
def provider() -> Provider:
    return ANTHROPIC


def _through_post(model: AnthropicModel) -> None:
    """Make `model` send with `client.post`, as the SDK's own request path does."""
    client = model._client_for_request()  # pyright: ignore[reportPrivateUsage]
    model._template = (client, None)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("bearer", [False, True])
async def test_the_request_sent_is_the_one_the_sdk_sends(fake: FakeLLM, make_model: MakeModel, bearer: bool) -> None:
    fake.push(turn(text("one")), turn(text("two")))
    model = make_model(bearer=bearer)
    assert isinstance(model, AnthropicModel)
    first = await model.request(ANTHROPIC.ask())
    assert await request_template(model._client_for_request()) is not None  # pyright: ignore[reportPrivateUsage]
    _through_post(model)
    second = await model.request(ANTHROPIC.ask())
    assert (first.parts, second.parts) != ((), ())
    lean, sdk = fake.requests
    assert lean["path"] == sdk["path"] == "/v1/messages"
    assert lean["body"] == sdk["body"]
    assert _stable(lean["headers"]) == _stable(sdk["headers"])
    credential = "authorization" if bearer else "x-api-key"
    assert credential in lean["headers"] and "content-length" in lean["headers"]


def _stable(headers: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in headers.items() if name not in PER_REQUEST}


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 529])
async def test_error_statuses_raise_what_the_sdk_raises(fake: FakeLLM, make_model: MakeModel, status: int) -> None:
    """Both paths turn the same answer into the same ModelAPIError (the fault policy sees no difference)."""
    model = make_model(max_retries=0)
    assert isinstance(model, AnthropicModel)
    fake.push(error(status), error(status))
    lean = await ANTHROPIC.failure(model)
    _through_post(model)
    sdk = await ANTHROPIC.failure(model)
    assert _without_request_id(str(lean)) == _without_request_id(str(sdk))  # each answer has its own id
    assert type(lean) is type(sdk)


def _without_request_id(message: str) -> str:
    return re.sub(r"req_[A-Za-z0-9_]+", "req_…", message)


async def test_a_client_that_prepares_its_own_requests_keeps_the_sdk_path() -> None:
    class Signed(anthropic.AsyncAnthropic):
        async def _prepare_request(self, request: httpx2.Request) -> None:
            request.headers["x-signature"] = "per request"

    plain = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9")
    signed = Signed(api_key="k", base_url="http://127.0.0.1:9")
    try:
        assert await request_template(plain) is not None
        assert await request_template(signed) is None
    finally:
        await plain.close()
        await signed.close()


async def test_a_cookie_the_api_sets_goes_with_the_next_request(fake: FakeLLM, make_model: MakeModel) -> None:
    """As the SDK's client sends its cookie jar (a load balancer's stickiness cookie, say) with every request."""
    model = make_model(max_retries=1)
    assert isinstance(model, AnthropicModel)
    fake.push(error(529, headers={"set-cookie": "lb=sticky; Path=/", "retry-after": "0"}), turn(text("ok")))

    answer = await model.request(ANTHROPIC.ask())

    assert answer.parts
    first, retried = fake.requests
    assert "cookie" not in first["headers"]
    assert retried["headers"]["cookie"] == "lb=sticky"


async def test_the_default_client_sends_through_aiohttp_directly(make_model: MakeModel) -> None:
    model = make_model()
    assert isinstance(model, AnthropicModel)
    template = await request_template(model._client_for_request())  # pyright: ignore[reportPrivateUsage]
    assert template is not None and template.direct is not None


async def test_a_compressed_event_stream_is_read_as_the_client_reads_it(fake: FakeLLM, make_model: MakeModel) -> None:
    """An answer the direct path does not read itself (here gzip) is handed to httpx2, which decodes it."""

    def gzipped(body: Json) -> Raw:
        events = anthropic_stream_bytes(turn(text("packed")), body)
        return raw(200, "text/event-stream", gzip.compress(events), {"content-encoding": "gzip"})

    fake.push(gzipped)
    answer = await make_model().request(ANTHROPIC.ask())
    assert answer.parts == (TextPart(text="packed"),)


async def test_a_redirect_is_followed_as_the_client_follows_it(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(raw(307, "text/plain", "", {"location": "/v1/messages"}), turn(text("moved")))
    answer = await make_model(max_retries=0).request(ANTHROPIC.ask())
    assert answer.parts == (TextPart(text="moved"),)
    assert [request["path"] for request in fake.requests] == ["/v1/messages", "/v1/messages"]
    assert fake.requests[0]["body"] == fake.requests[1]["body"]


async def test_a_cookie_set_by_a_successful_answer_goes_with_the_next_request(
    fake: FakeLLM, make_model: MakeModel
) -> None:
    def with_cookie(body: Json) -> Raw:
        events = anthropic_stream_bytes(turn(text("first")), body)
        return raw(200, "text/event-stream", events, {"set-cookie": "lb=node-2; Path=/"})

    model = make_model()
    fake.push(with_cookie, turn(text("second")))
    first = await model.request(ANTHROPIC.ask())
    second = await model.request(ANTHROPIC.ask())
    assert (first.parts, second.parts) == ((TextPart(text="first"),), (TextPart(text="second"),))
    assert "cookie" not in fake.requests[0]["headers"]
    assert fake.requests[1]["headers"]["cookie"] == "lb=node-2"
