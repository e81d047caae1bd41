from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import web
from mcp_subagents.tools.web import html_to_text

from .conftest import CallTool

pytestmark = pytest.mark.anyio

PAGE = """<!DOCTYPE html>
<html><head><title>The  Title</title><style>body { color: red }</style>
<script>var secret = "script text";</script></head>
<body>
  <nav><a href="#main">Skip</a></nav>
  <h1>Main heading</h1>
  <p>First   paragraph with <a href="/docs/intro">a relative link</a> and &amp; entities.</p>
  <ul><li>one</li><li>two</li></ul>
  <h2>Code</h2>
  <pre>def f():
    return 1</pre>
  <noscript>enable js</noscript>
</body></html>"""

ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/page": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE.encode()),
    "/plain": (200, {"Content-Type": "text/plain"}, b"just text\nsecond line\n"),
    "/json": (200, {"Content-Type": "application/json"}, b'{"answer": 42}'),
    "/latin1": (200, {"Content-Type": "text/plain; charset=iso-8859-1"}, "café".encode("latin-1")),
    "/untyped": (200, {}, b"<html><body><p>sniffed html</p></body></html>"),
    "/image": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
    "/missing": (404, {"Content-Type": "text/plain"}, b"no such page"),
    "/broken": (500, {"Content-Type": "text/plain"}, b"oops"),
    "/moved": (302, {"Location": "/plain"}, b""),
    "/loop": (302, {"Location": "/loop"}, b""),
    "/to-ftp": (302, {"Location": "ftp://127.0.0.1/file"}, b""),
    "/long": (200, {"Content-Type": "text/plain"}, b"x" * 150_000),
}


class Handler(BaseHTTPRequestHandler):
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(10)
            return
        status, headers, body = ROUTES.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    Handler.release.clear()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        Handler.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


async def test_webfetch_converts_html_to_readable_text(call: CallTool, server: str) -> None:
    result = await call("WebFetch", {"url": f"{server}/page", "prompt": "What is the heading?"})
    header, content = result.split("\n\n", 1)
    assert header == f"URL: {server}/page\nPrompt: What is the heading?"
    assert content.startswith("Title: The Title\n\n")
    assert "# Main heading" in content
    assert f"First paragraph with [a relative link]({server}/docs/intro) and & entities." in content
    assert "- one\n- two" in content
    assert "## Code" in content
    assert "def f():\n    return 1" in content
    assert "script text" not in content
    assert "color: red" not in content
    assert "enable js" not in content
    assert "Skip" in content
    assert "(#main)" not in content


async def test_webfetch_returns_plain_text_and_json_as_they_are(call: CallTool, server: str) -> None:
    plain = await call("WebFetch", {"url": f"{server}/plain", "prompt": "p"})
    assert plain.endswith("\n\njust text\nsecond line")
    assert (await call("WebFetch", {"url": f"{server}/json", "prompt": "p"})).endswith('{"answer": 42}')


async def test_webfetch_decodes_the_declared_charset(call: CallTool, server: str) -> None:
    assert (await call("WebFetch", {"url": f"{server}/latin1", "prompt": "p"})).endswith("café")


async def test_webfetch_sniffs_html_without_a_content_type(call: CallTool, server: str) -> None:
    assert (await call("WebFetch", {"url": f"{server}/untyped", "prompt": "p"})).endswith("sniffed html")


async def test_webfetch_follows_redirects_and_names_the_final_url(call: CallTool, server: str) -> None:
    result = await call("WebFetch", {"url": f"{server}/moved", "prompt": "p"})
    assert result.startswith(f"URL: {server}/moved\nFinal URL: {server}/plain\nPrompt: p\n\n")
    assert result.endswith("just text\nsecond line")


async def test_webfetch_stops_after_five_redirects(call: CallTool, server: str) -> None:
    with pytest.raises(ToolError, match="more than 5 redirects"):
        await call("WebFetch", {"url": f"{server}/loop", "prompt": "p"})


async def test_webfetch_refuses_a_redirect_to_another_scheme(call: CallTool, server: str) -> None:
    with pytest.raises(ToolError, match="only http and https"):
        await call("WebFetch", {"url": f"{server}/to-ftp", "prompt": "p"})


@pytest.mark.parametrize(("path", "status"), [("/missing", "HTTP 404 Not Found"), ("/broken", "HTTP 500")])
async def test_webfetch_reports_error_statuses(call: CallTool, server: str, path: str, status: str) -> None:
    with pytest.raises(ToolError, match=status):
        await call("WebFetch", {"url": f"{server}{path}", "prompt": "p"})


async def test_webfetch_refuses_binary_content(call: CallTool, server: str) -> None:
    with pytest.raises(ToolError, match="image/png"):
        await call("WebFetch", {"url": f"{server}/image", "prompt": "p"})


async def test_webfetch_caps_the_content(call: CallTool, server: str) -> None:
    result = await call("WebFetch", {"url": f"{server}/long", "prompt": "p"})
    assert "Content truncated: showing 100000 of 150000 characters" in result
    assert len(result) < 100_200


async def test_webfetch_caps_the_body(call: CallTool, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "MAX_BODY_BYTES", 1000)
    result = await call("WebFetch", {"url": f"{server}/long", "prompt": "p"})
    assert result.count("x") == 1000
    assert "larger than" in result


async def test_webfetch_times_out(call: CallTool, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "FETCH_TIMEOUT_SECONDS", 0.2)
    with pytest.raises(ToolError, match="timed out"):
        await call("WebFetch", {"url": f"{server}/slow", "prompt": "p"})


async def test_webfetch_reports_a_refused_connection(call: CallTool) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ToolError, match="ConnectError"):
        await call("WebFetch", {"url": f"http://127.0.0.1:{port}/", "prompt": "p"})


@pytest.mark.parametrize("url", ["ftp://example.com/file", "file:///etc/passwd", "example.com", "http://", "/relative"])
async def test_webfetch_accepts_only_http_urls(call: CallTool, url: str) -> None:
    with pytest.raises(ToolError, match="only absolute http"):
        await call("WebFetch", {"url": url, "prompt": "p"})


def test_importing_the_tools_does_not_import_the_http_client() -> None:
    import subprocess

    code = "import sys, mcp_subagents.tools; print('httpx2' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True)
    assert output.stdout.strip() == "False"


def test_html_to_text_keeps_structure_and_drops_noise() -> None:
    html = "<div>a<br>b</div><h3>T</h3><p>x <b>bold</b> y</p><img alt='chart'><template>hidden</template>"
    assert html_to_text(html) == "a\nb\n\n### T\n\nx bold y\n\n[image: chart]"
