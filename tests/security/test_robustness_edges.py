"""The edges a subagent's requests cross: a provider endpoint that is not the API, and a web page that redirects.

Before, a 200 whose body was HTML or empty ended the task in `AssertionError:` (Anthropic) or as an empty success
(OpenAI); and WebFetch followed a redirect to a host its domain rule did not allow.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLLM, raw, text, tool_use, turn

from .server import make_scene, run_task, tool_results

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("provider", "variable", "api"),
    [("anthropic", "ANTHROPIC_BASE_URL", "Anthropic API"), ("openai", "OPENAI_BASE_URL", "OpenAI API")],
)
@pytest.mark.parametrize(("content_type", "body"), [("text/html; charset=utf-8", None), ("text/plain", "")])
async def test_an_endpoint_that_is_not_the_api_gets_named_as_such(
    tmp_path: Path, fake: FakeLLM, provider: str, variable: str, api: str, content_type: str, body: str | None
) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    if provider == "openai":
        del scene.environ["ANTHROPIC_API_KEY"], scene.environ["ANTHROPIC_BASE_URL"]
        scene.environ |= {
            "OPENAI_API_KEY": "sk-openai-attack-0123456789",
            "OPENAI_BASE_URL": f"{fake.url}/v1",
            "MCP_SUBAGENTS_MODEL": "some-local-model",  # an OpenAI-compatible endpoint needs one (issue 14)
        }
    fake.default = raw(content_type=content_type, body=body)
    result, server = await run_task(scene, fake, finish=False)
    await server.close()
    got = content_type.split(";")[0]
    assert f"The endpoint at {variable} (" in result and f"did not answer like the {api} (got {got}" in result
    assert "AssertionError" not in result and result.startswith("<task_error")


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, ThreadingHTTPServer)
        port = self.server.server_port
        if self.path == "/go-elsewhere":
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{port}/internal")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/same-host-hop":
            self.send_response(301)
            self.send_header("Location", "/public")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"INTERNAL-ONLY" if self.path == "/internal" else b"public page"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def pages() -> Generator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def test_webfetch_does_not_follow_a_redirect_to_a_host_its_rules_do_not_allow(
    tmp_path: Path, fake: FakeLLM
) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE="dontAsk")
    scene.settings({"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}})
    with pages() as port:
        fetches = [
            tool_use("WebFetch", {"url": f"http://127.0.0.1:{port}/go-elsewhere", "prompt": "p"}),
            tool_use("WebFetch", {"url": f"http://127.0.0.1:{port}/same-host-hop", "prompt": "p"}),
        ]
        # The page the same-host hop reaches is read by the small model (WebFetch's prompt): one request between
        # the agent's two turns, answered here.
        result, server = await run_task(scene, fake, turn(*fetches), turn(text("READER: the page is public")))
        await server.close()
    reader_request = json.dumps(fake.requests[1]["body"])
    assert "public page" in reader_request and "INTERNAL-ONLY" not in reader_request
    elsewhere, same_host = tool_results(fake, 2)
    assert "INTERNAL-ONLY" not in elsewhere
    assert f"redirects to http://localhost:{port}/internal, which this fetch may not follow" in elsewhere
    assert "READER: the page is public" in same_host  # a hop on the same host needs no new check
    assert "done" in result
