"""Sending a Messages request through the SDK client's own HTTP client, as the request the SDK itself builds.

`client.post` builds every request anew: it copies the request options (a pydantic model), merges and validates
the layers of headers, parses the URL, and wraps the response in a stream object. With many Tasks at once that cost
about as much CPU as the HTTP exchange itself. Here the SDK builds the request for `/v1/messages` once per client
(`RequestTemplate`) and each request reuses its URL, headers and timeout with its own body. Failures are raised as
the SDK raises them (`APITimeoutError`, `APIConnectionError`, and its status errors, built by the SDK from the
response), so the adapter's fault policy cannot tell the difference. A client whose requests the SDK would change
per request (custom auth, middleware, its own request preparation) keeps `client.post`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
from anthropic._base_client import AsyncAPIClient
from anthropic._models import FinalRequestOptions

MESSAGES_PATH = "/v1/messages"
_PER_BODY_HEADERS = frozenset({"content-length", "transfer-encoding"})


@dataclass(frozen=True, slots=True)
class RequestTemplate:
    url: httpx2.URL
    headers: httpx2.Headers
    """The client's headers and the SDK's, merged once: without the body's length."""
    extensions: dict[str, Any]


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
    return RequestTemplate(built.url, headers, dict(built.extensions))


async def send_streaming(client: anthropic.AsyncAnthropic, template: RequestTemplate, body: bytes) -> httpx2.Response:
    """POST `body` as the template's request and return the streaming response once its status is a success.

    Raises:
        anthropic.APITimeoutError: the request timed out.
        anthropic.APIConnectionError: the request could not be sent, or no answer came.
        anthropic.APIStatusError: the answer's status is not a success (the SDK's subclass for the status).
    """
    http = client._client  # pyright: ignore[reportPrivateUsage]
    # What `http.build_request` makes, without merging the client's headers, URL and timeout again each time: the
    # template holds them merged. The client's cookies still go along, as build_request sends them.
    request = httpx2.Request(
        "POST",
        template.url,
        content=body,
        headers=template.headers,
        cookies=http.cookies,
        extensions=template.extensions,
    )
    try:
        response = await http.send(request, stream=True)
    except httpx2.TimeoutException as exc:
        raise anthropic.APITimeoutError(request=request) from exc
    except anthropic.AnthropicError:
        raise
    except Exception as exc:
        raise anthropic.APIConnectionError(request=request) from exc
    if not response.is_success:
        try:
            await response.aread()
        finally:
            await response.aclose()
        raise client._make_status_error_from_response(response) from None  # pyright: ignore[reportPrivateUsage]
    return response
