"""WebFetch: fetch one http(s) URL and return its content as readable text."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import anyio
from pydantic import Field

from ..core.errors import ModelAPIError, ToolError
from .base import Tool, ToolContext, ToolInput, UrlCheck
from .page_reader import answer_from_page

if TYPE_CHECKING:
    import httpx2

FETCH_TIMEOUT_SECONDS = 30.0
MAX_REDIRECTS = 5
MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_CONTENT_CHARS = 100_000
USER_AGENT = "Mozilla/5.0 (compatible; mcp-subagents WebFetch)"

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/x-ndjson",
    }
)


class WebFetchInput(ToolInput):
    url: str = Field(description="The http or https address of the page")
    prompt: str = Field(description="What to look for in the fetched content")


WEBFETCH_DESCRIPTION = f"""Fetches a URL and answers a prompt about its content.

- Takes a URL and a prompt. The URL must be a fully-formed http:// or https:// URL; it is fetched as given.
- HTML is converted to readable text (headings, list items and links kept; scripts and styles dropped); plain \
text, JSON, XML and other text types are read as they are. Images, PDFs and other binary content are refused.
- A small, fast model then reads the page (at most {MAX_CONTENT_CHARS} characters of it) and answers your prompt \
from it: say exactly what you want to know or extract. Its answer may leave things out; fetch again with a more \
precise prompt if needed. Where no such model is available, the page text itself is returned.
- Redirects are followed (at most {MAX_REDIRECTS}); the result names the final URL. The whole fetch must finish \
within {FETCH_TIMEOUT_SECONDS:.0f} s and reads at most {MAX_BODY_BYTES // (1024 * 1024)} MB.
- This tool is read-only and does not modify any files. It cannot log in or reach pages that need \
authentication."""


async def _run_webfetch(ctx: ToolContext, args: WebFetchInput) -> str:
    _check_url(args.url)
    page: _Page | None = None
    with anyio.move_on_after(FETCH_TIMEOUT_SECONDS):
        page = await _fetch(args.url, ctx.check_url)
    if page is None:
        raise ToolError(f"Fetching {args.url} timed out after {FETCH_TIMEOUT_SECONDS:.0f} s.")
    return await _apply_prompt(ctx, args, page)


async def _apply_prompt(ctx: ToolContext, args: WebFetchInput, page: _Page) -> str:
    """The answer of the fast model to the prompt; the page itself, prompt above it, when no model can answer."""
    lines = [f"URL: {args.url}"]
    if page.final_url != args.url:
        lines.append(f"Final URL: {page.final_url}")
    header = "\n".join(lines)
    if ctx.models is not None:
        try:
            answer = await answer_from_page(ctx.models, url=page.final_url, content=page.content, prompt=args.prompt)
        except ModelAPIError as exc:
            header += f"\n(The page could not be read for your prompt, so its text follows: {exc.message})"
        else:
            return f"{header}\n\n{answer}"
    return f"{header}\nPrompt: {args.prompt}\n\n{page.content}"


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"Invalid URL '{url}': only absolute http:// and https:// URLs can be fetched.")


@dataclass(frozen=True, slots=True)
class _Page:
    final_url: str
    content: str


async def _fetch(url: str, check_url: UrlCheck | None = None) -> _Page:
    """GET `url`, following redirects one hop at a time: a hop to another host passes `check_url` first, so a
    redirect cannot take the fetch where the domain rules would not."""
    import httpx2

    try:
        async with httpx2.AsyncClient(
            follow_redirects=False,
            timeout=httpx2.Timeout(FETCH_TIMEOUT_SECONDS),
            headers={"User-Agent": USER_AGENT, "Accept": "text/html, text/plain;q=0.9, */*;q=0.5"},
        ) as client:
            current = url
            for _ in range(MAX_REDIRECTS + 1):
                async with client.stream("GET", current) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = await _next_hop(current, response.headers["location"], check_url)
                        continue
                    final_url = str(response.url)
                    if not response.is_success:
                        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
                        raise ToolError(f"Fetching {final_url} failed: HTTP {response.status_code}{reason}.")
                    media_type = _media_type(response)
                    if media_type and not _is_textual(media_type):
                        raise ToolError(
                            f"{final_url} returned {media_type} content, which WebFetch cannot read: it reads HTML "
                            "and text only."
                        )
                    body, body_cut = await _read_capped(response)
                    text = _decode(body, response.charset_encoding)
                    break
            else:
                raise ToolError(f"Fetching {url} failed: more than {MAX_REDIRECTS} redirects.")
    except httpx2.UnsupportedProtocol as exc:
        raise ToolError(f"Fetching {url} failed: {exc} (only http and https are supported).") from None
    except httpx2.TimeoutException:
        raise ToolError(f"Fetching {url} timed out after {FETCH_TIMEOUT_SECONDS:.0f} s.") from None
    except (httpx2.RequestError, httpx2.InvalidURL) as exc:
        raise ToolError(f"Fetching {url} failed: {type(exc).__name__}: {exc}") from None

    if media_type in _HTML_TYPES or (not media_type and _looks_like_html(text)):
        text = html_to_text(text, base_url=final_url)
    elif not media_type and "\0" in text:
        raise ToolError(f"{final_url} returned binary content, which WebFetch cannot read.")
    return _Page(final_url, _cap(text.strip(), body_cut))


async def _next_hop(current: str, location: str, check_url: UrlCheck | None) -> str:
    target = urljoin(current, location)
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"Fetching {current} failed: it redirects to {target}; only http and https are supported.")
    if check_url is not None and parts.hostname != urlsplit(current).hostname:
        await check_url(target)
    return target


def _media_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _is_textual(media_type: str) -> bool:
    return (
        media_type.startswith("text/")
        or media_type in _HTML_TYPES
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


async def _read_capped(response: httpx2.Response) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            return bytes(body[:MAX_BODY_BYTES]), True
    return bytes(body), False


def _decode(body: bytes, charset: str | None) -> str:
    try:
        encoding = codecs.lookup(charset or "utf-8").name
    except LookupError:
        encoding = "utf-8"
    return body.decode(encoding, errors="replace")


def _looks_like_html(text: str) -> bool:
    start = text.lstrip()[:500].lower()
    return start.startswith(("<!doctype html", "<html")) or "<body" in start


def _cap(text: str, body_cut: bool) -> str:
    if len(text) > MAX_CONTENT_CHARS:
        return (
            f"{text[:MAX_CONTENT_CHARS]}\n\n(Content truncated: showing {MAX_CONTENT_CHARS} of {len(text)} characters.)"
        )
    if body_cut:
        return f"{text}\n\n(Content truncated: the page is larger than {MAX_BODY_BYTES // (1024 * 1024)} MB.)"
    return text


_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object", "canvas"})
_PARAGRAPHS = frozenset({"p", "pre", "blockquote", "table", "ul", "ol", "dl", "figure", "form", "hr"})
_LINES = frozenset(
    {"div", "section", "article", "header", "footer", "nav", "aside", "main", "tr", "dt", "dd", "figcaption", "br"}
)
_WHITESPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")


def html_to_text(html: str, *, base_url: str = "") -> str:
    """Readable text from HTML: the title, headings as `#`, list items as `-`, links as `[text](url)`."""
    extractor = _TextExtractor(base_url)
    extractor.feed(html)
    extractor.close()
    return extractor.text()


class _TextExtractor(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self._base_url = base_url
        self._chunks: list[str] = []
        self._title: list[str] = []
        self._in_title = False
        self._skip_depth = 0
        self._pre_depth = 0
        self._links: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIPPED:
            self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._break(2)
            self._chunks.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self._break(1)
            self._chunks.append("- ")
        elif tag in ("td", "th"):
            self._chunks.append(" ")
        elif tag == "a":
            self._links.append((len(self._chunks), dict(attrs).get("href") or ""))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._chunks.append(f"[image: {alt}]")
        elif tag in _PARAGRAPHS:
            self._break(2)
        elif tag in _LINES:
            self._break(1)
        if tag == "pre":
            self._pre_depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "hr", "img"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIPPED:
            self._skip_depth = max(self._skip_depth - 1, 0)
            return
        if self._skip_depth:
            return
        if tag == "a" and self._links:
            self._close_link(*self._links.pop())
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._break(2)
        elif tag in _PARAGRAPHS:
            self._break(2)
        elif tag in _LINES or tag == "li":
            self._break(1)
        if tag == "pre":
            self._pre_depth = max(self._pre_depth - 1, 0)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
            return
        if self._skip_depth:
            return
        if self._pre_depth:
            self._chunks.append(data)
            return
        text = _WHITESPACE.sub(" ", data)
        if self._ends_with_space():
            text = text.lstrip()
        if text:
            self._chunks.append(text)

    def text(self) -> str:
        body = "".join(self._chunks)
        body = "\n".join(line.rstrip() for line in body.split("\n"))
        body = _BLANK_LINES.sub("\n\n", body).strip()
        title = _WHITESPACE.sub(" ", "".join(self._title)).strip()
        return f"Title: {title}\n\n{body}" if title else body

    def _close_link(self, start: int, href: str) -> None:
        label = "".join(self._chunks[start:]).strip()
        if not label or not href or href.startswith(("#", "javascript:")):
            return
        del self._chunks[start:]
        self._chunks.append(f"[{label}]({urljoin(self._base_url, href)})")

    def _ends_with_space(self) -> bool:
        for chunk in reversed(self._chunks):
            if chunk:
                return chunk[-1].isspace()
        return True

    def _break(self, newlines: int) -> None:
        trailing = 0
        for chunk in reversed(self._chunks):
            stripped = chunk.rstrip("\n")
            trailing += len(chunk) - len(stripped)
            if stripped:
                break
        if not self._chunks:
            return
        self._chunks.append("\n" * max(newlines - trailing, 0))


WEBFETCH = Tool(
    name="WebFetch", description=WEBFETCH_DESCRIPTION, input_model=WebFetchInput, run=_run_webfetch, read_only=True
)
