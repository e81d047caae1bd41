"""Sending a Messages request through the SDK client's own HTTP client, as the request the SDK itself builds.

`client.post` builds every request anew: it copies the request options (a pydantic model), merges and validates
the layers of headers, parses the URL, and wraps the response in a stream object. With many Tasks at once that cost
about as much CPU as the HTTP exchange itself. Here the SDK builds the request for `/v1/messages` once per client
(`RequestTemplate`) and each request reuses its URL, headers and timeout with its own body. Failures are raised as
the SDK raises them (`APITimeoutError`, `APIConnectionError`, and its status errors, built by the SDK from the
response), so the adapter's fault policy cannot tell the difference. A client whose requests the SDK would change
per request (custom auth, middleware, its own request preparation) keeps `client.post`.

When the SDK's HTTP client sends through its aiohttp transport (the default), the request goes to that transport's
aiohttp session directly, with the arguments the transport would give it: httpx2's layers around the exchange (auth
and redirect flows, request and response models, the byte-stream wrappers) cost a fifth of a round trip's CPU. The
usual answer, a successful event stream, is read straight from aiohttp. Any other answer (an error status, a
redirect, a cookie to keep, a compressed body) becomes the httpx2 response the transport would have made and takes
the client's path from there, so it ends exactly as before; a client with cookies in its jar, event hooks or httpx2
auth sends through httpx2 throughout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import anthropic
import httpx2
from anthropic._base_client import AsyncAPIClient
from anthropic._models import FinalRequestOptions
from anthropic._vendor.httpx_aiohttp.transport import (
    AiohttpResponseStream,
    AiohttpTransport,
    map_aiohttp_exceptions,
)

MESSAGES_PATH = "/v1/messages"
_PER_BODY_HEADERS = frozenset({"content-length", "transfer-encoding"})


@dataclass(frozen=True, slots=True)
class DirectRoute:
    """The SDK's aiohttp transport for the template's URL, and what that transport would hand its session."""

    transport: AiohttpTransport
    url: str
    headers: tuple[tuple[str, str], ...]
    options: dict[str, Any]
    """aiohttp's request arguments besides the URL, headers and body: timeouts, proxy, no redirects."""


@dataclass(frozen=True, slots=True)
class RequestTemplate:
    url: httpx2.URL
    headers: httpx2.Headers
    """The client's headers and the SDK's, merged once: without the body's length."""
    extensions: dict[str, Any]
    direct: DirectRoute | None = None
    """Set when the client's transport for the URL is the SDK's aiohttp transport and nothing in httpx2 would
    change the request."""


_KNOWN_OPTION_HOOKS = (
    AsyncAPIClient._prepare_options,  # pyright: ignore[reportPrivateUsage]
    anthropic.AsyncAnthropic._prepare_options,  # pyright: ignore[reportPrivateUsage]
)
"""Option hooks that depend on the options alone, which are the same for every request here."""


async def request_template(client: anthropic.AsyncAnthropic) -> RequestTemplate | None:
    """The SDK's request for `/v1/messages` without its body, or None when the SDK would build each request
    differently (then `client.post` sends it)."""
    cls = type(client)
    if (
        client.custom_auth is not None
        or getattr(client, "_middleware", None)
        or cls._prepare_options not in _KNOWN_OPTION_HOOKS  # pyright: ignore[reportPrivateUsage]
        or cls._prepare_request is not AsyncAPIClient._prepare_request  # pyright: ignore[reportPrivateUsage]
        or client._client.params  # pyright: ignore[reportPrivateUsage]
    ):
        return None
    options = FinalRequestOptions.construct(method="post", url=MESSAGES_PATH, content=b"")
    options = await client._prepare_options(options)  # pyright: ignore[reportPrivateUsage]
    built = client._build_request(options)  # pyright: ignore[reportPrivateUsage]
    headers = httpx2.Headers(
        [(name, value) for name, value in built.headers.multi_items() if name.lower() not in _PER_BODY_HEADERS]
    )
    extensions = dict(built.extensions)
    http = client._client  # pyright: ignore[reportPrivateUsage]
    return RequestTemplate(built.url, headers, extensions, _direct_route(http, built.url, headers, extensions))


def _direct_route(
    http: httpx2.AsyncClient, url: httpx2.URL, headers: httpx2.Headers, extensions: dict[str, Any]
) -> DirectRoute | None:
    """The aiohttp exchange `AiohttpTransport.handle_async_request` would make for this request, when nothing in
    httpx2 changes the request on the way there."""
    transport = http._transport_for_url(url)  # pyright: ignore[reportPrivateUsage]
    if type(transport) is not AiohttpTransport or http.auth is not None or any(http.event_hooks.values()):
        return None
    timeout = extensions.get("timeout", {})
    proxy = transport.proxy
    options: dict[str, Any] = {
        "allow_redirects": False,
        "auto_decompress": False,
        "compress": False,
        "timeout": aiohttp.ClientTimeout(
            sock_connect=timeout.get("connect"), sock_read=timeout.get("read"), connect=timeout.get("pool")
        ),
        "server_hostname": extensions.get("sni_hostname"),
        "proxy": str(proxy.url) if proxy else None,
        "proxy_auth": aiohttp.BasicAuth(proxy.auth[0], proxy.auth[1]) if proxy and proxy.auth else None,
        "proxy_headers": proxy.headers if proxy else None,
    }
    return DirectRoute(transport, str(url), tuple(headers.multi_items()), options)


class DirectResponse:
    """A successful event stream read straight from aiohttp; failures while reading are raised as httpx2's, as the
    transport raises them."""

    def __init__(self, answer: aiohttp.ClientResponse) -> None:
        self.headers: Mapping[str, str] = answer.headers
        self._answer = answer
        self._stream = AiohttpResponseStream(answer)

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()

    async def aread(self) -> bytes:
        with map_aiohttp_exceptions():
            return await self._answer.read()

    async def aclose(self) -> None:
        await self._stream.aclose()


StreamingResponse = httpx2.Response | DirectResponse


async def send_streaming(client: anthropic.AsyncAnthropic, template: RequestTemplate, body: bytes) -> StreamingResponse:
    """POST `body` as the template's request and return the streaming response once its status is a success.

    Raises:
        anthropic.APITimeoutError: the request timed out.
        anthropic.APIConnectionError: the request could not be sent, or no answer came.
        anthropic.APIStatusError: the answer's status is not a success (the SDK's subclass for the status).
    """
    http = client._client  # pyright: ignore[reportPrivateUsage]
    if template.direct is None or http.cookies:
        return await _send_through_client(client, template, body)
    answer = await _exchange(template.direct, http, template, body)
    headers = answer.headers
    if 200 <= answer.status < 300 and "set-cookie" not in headers and "content-encoding" not in headers:
        return DirectResponse(answer)
    # The httpx2 response the transport would have made, handled as the client handles it.
    response = httpx2.Response(
        status_code=answer.status,
        headers=answer.raw_headers,
        stream=AiohttpResponseStream(answer),
        request=_request(http, template, body),
        extensions={
            "http_version": b"HTTP/1.1",
            **({"reason_phrase": answer.reason.encode()} if answer.reason else {}),
        },
    )
    http.cookies.extract_cookies(response)
    if response.is_redirect and http.follow_redirects:
        await response.aclose()
        return await _send_through_client(client, template, body)  # sent again, and the client follows it
    return await _successful(client, response)


async def _exchange(
    route: DirectRoute, http: httpx2.AsyncClient, template: RequestTemplate, body: bytes
) -> aiohttp.ClientResponse:
    transport = route.transport
    if not isinstance(transport.client, aiohttp.ClientSession):
        transport.client = transport.get_client()  # as the transport does at its first request
    try:
        with map_aiohttp_exceptions():
            return await transport.client.request("POST", route.url, headers=route.headers, data=body, **route.options)
    except httpx2.TimeoutException as exc:
        raise anthropic.APITimeoutError(request=_request(http, template, body)) from exc
    except Exception as exc:
        raise anthropic.APIConnectionError(request=_request(http, template, body)) from exc


def _request(http: httpx2.AsyncClient, template: RequestTemplate, body: bytes) -> httpx2.Request:
    """What `http.build_request` makes, without merging the client's headers, URL and timeout again each time: the
    template holds them merged. The client's cookies still go along, as build_request sends them."""
    return httpx2.Request(
        "POST",
        template.url,
        content=body,
        headers=template.headers,
        cookies=http.cookies,
        extensions=template.extensions,
    )


async def _send_through_client(
    client: anthropic.AsyncAnthropic, template: RequestTemplate, body: bytes
) -> httpx2.Response:
    http = client._client  # pyright: ignore[reportPrivateUsage]
    request = _request(http, template, body)
    try:
        response = await http.send(request, stream=True)
    except httpx2.TimeoutException as exc:
        raise anthropic.APITimeoutError(request=request) from exc
    except anthropic.AnthropicError:
        raise
    except Exception as exc:
        raise anthropic.APIConnectionError(request=request) from exc
    return await _successful(client, response)


async def _successful(client: anthropic.AsyncAnthropic, response: httpx2.Response) -> httpx2.Response:
    if not response.is_success:
        try:
            await response.aread()
        finally:
            await response.aclose()
        raise client._make_status_error_from_response(response) from None  # pyright: ignore[reportPrivateUsage]
    return response
