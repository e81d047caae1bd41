"""The adapters' aiohttp paths (the Anthropic adapter's direct one in models/anthropic_send.py, the OpenAI
adapter's transport) must send where the SDK's client sends.

Attack: a company sets HTTPS_PROXY/HTTP_PROXY so that every call to a model API passes its proxy (which logs,
filters or holds the only route out). A request handed to aiohttp without the proxy the client chose for the URL
would leave through the direct route, unseen. Here the fake API stands in for the proxy and the API's host does not
resolve: the answer comes only if the request went through the proxy.
"""

from __future__ import annotations

import pytest

from mcp_subagents.core.messages import TextPart
from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.models.adapters import ANTHROPIC, OPENAI, Provider

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("provider", "unresolvable_host"),
    [(ANTHROPIC, "api.anthropic.invalid"), (OPENAI, "api.openai.invalid")],
    ids=["anthropic", "openai"],
)
async def test_a_request_goes_through_the_proxy_the_environment_names(
    fake: FakeLLM, monkeypatch: pytest.MonkeyPatch, provider: Provider, unresolvable_host: str
) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake.url)
    model = provider.adapter(**provider.options(f"http://{unresolvable_host}"))
    try:
        fake.push(turn(text("through the proxy")))
        answer = await model.request(provider.ask())
    finally:
        await model.aclose()
    assert answer.parts == (TextPart(text="through the proxy"),)
    (request,) = fake.requests
    assert request["headers"]["host"] == unresolvable_host
