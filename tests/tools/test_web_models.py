"""WebFetch's prompt applied by a small fast model, and WebSearch through the Anthropic API's server-side search:
the real Anthropic SDK against the fake Messages API, and a real local HTTP server for the page."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.models.anthropic import AnthropicModel
from mcp_subagents.tools import ToolContext
from mcp_subagents.tools.base import ModelAccess
from mcp_subagents.tools.web import WEBFETCH
from mcp_subagents.tools.web_search import WEBSEARCH
from tests.fakes.fake_llm import FakeLLM, error, text, turn, web_search_blocks

pytestmark = pytest.mark.anyio

PAGE = (
    b"<html><head><title>Release notes</title></head><body><h1>v2.0</h1><p>PAGE-FACT: ships on May 4.</p></body></html>"
)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/notes"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
async def ctx(tmp_path: Path, fake: FakeLLM) -> AsyncIterator[ToolContext]:
    model = AnthropicModel(api_key="sk-ant-web-0123456789", base_url=fake.url, max_retries=0)
    access = ModelAccess(model=model, main_model_id="claude-sonnet-5-5", fast_model_id="claude-haiku-5-5")
    yield ToolContext(cwd=tmp_path, allowed_roots=(tmp_path,), env={}, models=access)
    await model.aclose()


async def test_webfetch_answers_the_prompt_with_the_fast_model(ctx: ToolContext, fake: FakeLLM, page_url: str) -> None:
    fake.push(turn(text("It ships on May 4.")))

    result = await WEBFETCH.run(ctx, WEBFETCH.validate({"url": page_url, "prompt": "When does it ship?"}))

    assert result == f"URL: {page_url}\n\nIt ships on May 4."
    body = fake.requests[0]["body"]
    assert body["model"] == "claude-haiku-5-5"
    asked = body["messages"][0]["content"][0]["text"]
    assert "PAGE-FACT: ships on May 4." in asked and "When does it ship?" in asked
    assert "thinking" not in body and "tools" not in body


async def test_webfetch_returns_the_page_when_the_model_fails(ctx: ToolContext, fake: FakeLLM, page_url: str) -> None:
    fake.push(error(400, message="bad model"))

    result = await WEBFETCH.run(ctx, WEBFETCH.validate({"url": page_url, "prompt": "When?"}))

    assert "could not be read for your prompt" in result and "bad model" in result
    assert result.endswith("PAGE-FACT: ships on May 4.")


async def test_websearch_uses_the_server_side_tool_with_the_domain_filter(ctx: ToolContext, fake: FakeLLM) -> None:
    use, results = web_search_blocks(
        "mcp 2026 spec",
        [("MCP spec", "https://modelcontextprotocol.io/spec"), ("Changelog", "https://modelcontextprotocol.io/log")],
    )
    fake.push(turn(use, results, text("The 2026-07-28 revision adds stateless requests (MCP spec).")))

    result = await WEBSEARCH.run(
        ctx, WEBSEARCH.validate({"query": "mcp 2026 spec", "allowed_domains": ["modelcontextprotocol.io"]})
    )

    body = fake.requests[0]["body"]
    assert body["model"] == "claude-sonnet-5-5"
    assert body["tools"] == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 8,
            "allowed_domains": ["modelcontextprotocol.io"],
        }
    ]
    assert "mcp 2026 spec" in body["messages"][0]["content"][0]["text"]
    assert result.startswith('Web search results for "mcp 2026 spec":\n\nLinks: [{"title": "MCP spec"')
    assert '"url": "https://modelcontextprotocol.io/log"' in result
    assert "The 2026-07-28 revision adds stateless requests (MCP spec)." in result
    assert result.endswith("cite the pages you rely on as markdown links: [title](url).")


async def test_websearch_blocked_domains_are_passed_on(ctx: ToolContext, fake: FakeLLM) -> None:
    fake.push(turn(text("Nothing relevant.")))

    result = await WEBSEARCH.run(ctx, WEBSEARCH.validate({"query": "news", "blocked_domains": ["spam.example"]}))

    assert fake.requests[0]["body"]["tools"][0]["blocked_domains"] == ["spam.example"]
    assert "No pages were found." in result


async def test_websearch_refuses_both_filters_and_a_missing_provider(ctx: ToolContext, tmp_path: Path) -> None:
    both = WEBSEARCH.validate({"query": "x y", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]})
    with pytest.raises(ToolError, match="not both"):
        await WEBSEARCH.run(ctx, both)
    bare = ToolContext(cwd=tmp_path, allowed_roots=(tmp_path,), env={})
    with pytest.raises(ToolError, match="needs the Anthropic API's server-side web search"):
        await WEBSEARCH.run(bare, WEBSEARCH.validate({"query": "x y"}))
