"""What the provider adapters share: settings, a lazily built SDK client, the fault policy and the error wording.

Fault policy, as Claude Code waits out busy periods: 408/409/429/5xx answers, connection errors, timeouts and an
error in the middle of a stream are retried up to `max_retries` times (10), with exponential backoff from
`retry_backoff` (0.5 s) up to `max_backoff` (32 s) plus up to a quarter more at random. A `retry-after` (or
`retry-after-ms`) the provider sends is waited instead, and `x-should-retry` is obeyed. One overall `deadline` bounds
all of it: when the next wait would pass it, the last error is raised at once. The SDKs' own retries are off.
Whatever is left is raised as `ModelAPIError` (`PromptTooLongError` when the input does not fit the context window).

No provider SDK is imported here: each adapter names its own SDK's client and exception classes.
"""

from __future__ import annotations

import copy
import email.utils
import logging
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar, Generic, NotRequired, Protocol, TypedDict, TypeVar

import anyio
import httpx2

from ..core.errors import ModelAPIError, PromptTooLongError
from ..core.messages import (
    AssistantMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from ..core.redaction import Redactor
from .base import ModelRequest, ModelResponse
from .resolve import MODEL_HINT

logger = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 10.0
_JITTER = 0.25
_PROMPT_TOO_LONG = re.compile(
    r"prompt is too long|input length and `?max_tokens`? exceed context limit|context_length_exceeded"
    r"|maximum context length|exceeds the (?:available )?context (?:size|window)",
    re.IGNORECASE,
)
# How endpoints say that they do not serve the model asked for: OpenAI's and vLLM's "The model `x` does not exist",
# Ollama's "model 'x' not found", OpenRouter's "x is not a valid model ID", Anthropic's 404 "model: x".
_MODEL_NOT_SERVED = re.compile(
    r"\bmodel\b.{0,80}\b(?:not found|does not exist|not exist|not available)"
    r"|not a valid model|(?:unknown|invalid|no such) model|^model: \S+$",
    re.IGNORECASE,
)
# Error types that a retry cannot fix, even when they arrive mid-stream.
_FATAL_ERROR_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "billing_error"}
)

T = TypeVar("T")


class SdkClient(Protocol):
    """What the adapter uses of an SDK's async client, besides the API call itself."""

    @property
    def base_url(self) -> object: ...

    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SdkClient)


REHEARSAL_REQUEST = ModelRequest(
    model="rehearsal",
    system="Rehearsal.",
    messages=(
        UserMessage(content="Look.", context=("ctx",)),
        AssistantMessage(
            parts=(
                ThinkingPart(text="", signature="sig"),
                TextPart(text="Looking."),
                ToolCall(id="call_1", name="Glob", arguments={"pattern": "*"}),
            )
        ),
        ToolResultMessage(results=(ToolResult(call_id="call_1", content="a.md"),)),
    ),
    tools=(ToolDefinition(name="Glob", description="Find files."),),
    max_tokens=64,
)
"""A request with every kind of part, so the rehearsal maps what real requests carry."""


class EventStreamAnswer(Protocol):
    """What is read of a 200 answer before its events: an httpx2 response, or the Anthropic adapter's direct one."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def aread(self) -> bytes: ...


class ClientOptions(TypedDict):
    """The keyword arguments that both SDKs' async clients are built with."""

    api_key: str
    base_url: str | None
    max_retries: int
    timeout: httpx2.Timeout
    _strict_response_validation: bool
    http_client: NotRequired[httpx2.AsyncClient]


class StreamBroken(Exception):
    """The response started (status 200) and then failed part-way: an error event or chunk, or a dropped connection."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


_REHEARSED: set[type[object]] = set()
"""The adapter classes this process has rehearsed a request with."""


class SdkAdapter(ABC, Generic[ClientT]):
    """A `Model` over a provider SDK's async client. Subclasses map messages and name their SDK's exceptions."""

    _api: ClassVar[str]
    """How error messages name the provider, e.g. "Anthropic API"."""
    _key_variable: ClassVar[str]
    """The environment variable a rejected API key comes from."""
    _url_variable: ClassVar[str]
    """The environment variable that points the adapter at another endpoint."""
    _sdk_error: ClassVar[type[Exception]]
    _sdk_timeout_error: ClassVar[type[Exception]]
    _sdk_connection_error: ClassVar[type[Exception]]

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 10,
        request_timeout: float = 600.0,
        deadline: float = 900.0,
        strict_validation: bool = False,
        retry_backoff: float = 0.5,
        max_backoff: float = 32.0,
    ) -> None:
        self._api_key = api_key
        self._redact = Redactor((api_key,))
        self._base_url = base_url
        self._max_retries = max_retries
        self._request_timeout = request_timeout
        self._deadline = deadline
        self._retry_backoff = retry_backoff
        self._max_backoff = max_backoff
        self._strict_validation = strict_validation
        self._client: ClientT | None = None
        self._http_client: httpx2.AsyncClient | None = None
        """Only for the offline rehearsal (`open`): the SDK's transport, replaced by a canned answer."""

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        try:
            with anyio.fail_after(self._deadline):
                return await self._retrying(request)
        except TimeoutError:
            raise ModelAPIError(
                f"{self._api} request timed out after {self._deadline:g} s (deadline over all retries)", retryable=True
            ) from None

    async def _retrying(self, request: ModelRequest) -> ModelResponse:
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                return await self._request(request)
            except ModelAPIError as exc:
                if not exc.retryable or attempt >= self._max_retries:
                    raise
                wait = exc.retry_after if exc.retry_after is not None else self._backoff(attempt)
                if time.monotonic() - started + wait >= self._deadline:
                    raise type(exc)(
                        f"{exc.message} (gave up after {attempt + 1} attempt(s): waiting {wait:.1f} s more would pass "
                        f"the {self._deadline:g} s deadline)",
                        status_code=exc.status_code,
                        retryable=True,
                    ) from None
                attempt += 1
                logger.info("%s; retry %d of %d in %.1f s", exc.message, attempt, self._max_retries, wait)
                await anyio.sleep(wait)

    def _backoff(self, attempt: int) -> float:
        delay = min(self._retry_backoff * 2**attempt, self._max_backoff)
        return delay * (1 + random.random() * _JITTER)

    @abstractmethod
    async def _request(self, request: ModelRequest) -> ModelResponse:
        """The whole request, without the deadline; each attempt goes through `_converting_errors`."""

    @abstractmethod
    def _open_client(self) -> ClientT:
        """A new SDK client, built with `_client_options()`."""

    @staticmethod
    @abstractmethod
    def _error_type(exc: Exception) -> str | None:
        """The provider's error type of `exc`, such as "overloaded_error", if it has one."""

    @abstractmethod
    def _provider_error(self, exc: Exception, *, mid_stream: bool) -> ModelAPIError | None:
        """`exc` as a `ModelAPIError` if the provider answered it (error status, error event, malformed body)."""

    def _credential_variable(self) -> str:
        """The environment variable the key came from, named when the provider rejects it."""
        return self._key_variable

    def open(self) -> None:
        """Build the SDK client now rather than at the first request, and rehearse a request (`rehearse`).

        Runs in a worker thread, with an event loop of its own for the rehearsal."""
        self._client_for_request()
        self.rehearse()

    def rehearse(self) -> None:
        """Send one request against a canned answer, offline, once per adapter class and process: the SDK builds its
        request and response types lazily, at the first request (about a fifth of a second), and what it builds
        is kept by the process (and by the servers the warm server forks, which rehearsed before forking)."""
        kind = type(self)
        if kind in _REHEARSED:
            return
        try:
            anyio.run(self._rehearse)
        except Exception:  # only a head start: the real first request works without it
            logger.debug("the offline rehearsal request failed", exc_info=True)
            return
        _REHEARSED.add(kind)

    async def _rehearse(self) -> None:
        rehearsal = copy.copy(self)
        body = self._rehearsal_stream()
        transport = httpx2.MockTransport(
            lambda _request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
        )
        rehearsal._base_url = "http://rehearsal.invalid"
        rehearsal._http_client = httpx2.AsyncClient(transport=transport)
        rehearsal._client = None
        try:
            await rehearsal.request(REHEARSAL_REQUEST)
        finally:
            await rehearsal.aclose()
            await rehearsal._http_client.aclose()

    @abstractmethod
    def _rehearsal_stream(self) -> bytes:
        """A short streamed answer in the provider's wire format: text, a tool call and usage."""

    def _client_for_request(self) -> ClientT:
        if self._client is None:
            self._client = self._open_client()
        return self._client

    def _client_options(self) -> ClientOptions:
        options = ClientOptions(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=httpx2.Timeout(self._request_timeout, connect=min(_CONNECT_TIMEOUT, self._request_timeout)),
            _strict_response_validation=self._strict_validation,
        )
        if self._http_client is not None:
            options["http_client"] = self._http_client
        return options

    async def _converting_errors(self, stream: Callable[[], Awaitable[T]]) -> T:
        """`stream()`, with any SDK error (or a stream broken part-way) raised as a `ModelAPIError`."""
        try:
            return await stream()
        except StreamBroken as broken:
            raise self._error(broken.cause, mid_stream=True) from None
        except self._sdk_error as exc:
            raise self._error(exc) from None
        except ValueError as exc:  # broken JSON in the body, or tool input the SDK cannot parse even partially
            raise self._make(f"{self._api} sent a stream that could not be parsed: {exc}", None, False) from None

    def _error(self, exc: Exception, *, mid_stream: bool = False) -> ModelAPIError:
        answered = self._provider_error(exc, mid_stream=mid_stream)
        if answered is not None:
            return answered
        if self._timed_out(exc):
            message = f"{self._api} request timed out (no response within {self._request_timeout:g} s)"
            return self._make(message, None, True)
        if isinstance(exc, (self._sdk_connection_error, httpx2.TransportError)):
            if mid_stream:
                return self._make(f"{self._api} stream was interrupted: {_cause(exc)}", None, True)
            return self._make(f"Could not connect to the {self._api} at {self._url()}: {_cause(exc)}", None, True)
        return self._make(f"{self._api} call failed: {exc}", None, False)

    def _timed_out(self, exc: Exception) -> bool:
        return isinstance(exc, (self._sdk_timeout_error, httpx2.TimeoutException))

    def _status_error(
        self,
        status: int,
        error_type: str | None,
        detail: str,
        request_id: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> ModelAPIError:
        kind = f" {error_type}" if error_type else ""
        request = f" (request {request_id})" if request_id else ""
        if status == 401:
            message = (
                f"{self._api} rejected the API key (401{kind}: {detail}){request}. Check {self._credential_variable()}."
            )
        elif status in (400, 404, 422) and _MODEL_NOT_SERVED.search(detail.strip()):
            message = (
                f"{self._api} does not serve the model asked for ({status}{kind}: {detail}){request}. {MODEL_HINT}."
            )
        elif status in (400, 403, 404, 413, 422):
            message = f"{self._api} rejected the request ({status}{kind}: {detail}){request}"
        else:
            message = f"{self._api} error {status}{kind}: {detail}{request}"
        if status in (400, 413) and _PROMPT_TOO_LONG.search(f"{error_type} {detail}"):
            return PromptTooLongError(self._redact(message), status_code=status)
        should_retry, retry_after = retry_hints(headers or {})
        retryable = should_retry if should_retry is not None else status in (408, 409, 429) or status >= 500
        return self._make(message, status, retryable, retry_after)

    def _stream_error(self, error_type: str | None, detail: str, request_id: str | None = None) -> ModelAPIError:
        kind = f" {error_type}" if error_type else ""
        request = f" (request {request_id})" if request_id else ""
        message = f"{self._api} stream error{kind}: {detail}{request}"
        if _PROMPT_TOO_LONG.search(detail):
            return PromptTooLongError(self._redact(message))
        return self._make(message, None, error_type not in _FATAL_ERROR_TYPES)

    async def _require_event_stream(self, response: EventStreamAnswer) -> None:
        """Raise a clear error when a 200 answer is not a stream of events (a login page, a wrong URL)."""
        content_type = response.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "text/event-stream":
            raise self._not_the_api(content_type, await response.aread())

    def _not_the_api(self, content_type: str, body: bytes) -> ModelAPIError:
        got = content_type.split(";")[0].strip() or "no content type"
        preview = " ".join(body.decode("utf-8", errors="replace").split())[:160]
        detail = f"got {got}, {len(body)} bytes" + (f": {preview!r}" if preview else "")
        message = (
            f"The endpoint at {self._url_variable} ({self._url()}) did not answer like the {self._api} ({detail}). "
            f"Check {self._url_variable}."
        )
        return self._make(message, None, False)

    def _malformed_response(self, detail: str, status_code: int) -> ModelAPIError:
        return self._make(f"{self._api} returned a malformed response: {detail}", status_code, False)

    def _make(
        self, message: str, status_code: int | None, retryable: bool, retry_after: float | None = None
    ) -> ModelAPIError:
        return ModelAPIError(
            self._redact(message), status_code=status_code, retryable=retryable, retry_after=retry_after
        )

    def _url(self) -> str:
        return str(self._client.base_url) if self._client is not None else (self._base_url or "the default URL")


def retry_hints(headers: Mapping[str, str]) -> tuple[bool | None, float | None]:
    """What an error response says about retrying: `x-should-retry` (None when absent) and the wait it asks for in
    `retry-after-ms` or `retry-after` (seconds or an HTTP date; None when absent or unreadable)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    should = lowered.get("x-should-retry", "").strip().lower()
    should_retry = True if should == "true" else False if should == "false" else None
    wait: float | None = None
    try:
        if "retry-after-ms" in lowered:
            wait = float(lowered["retry-after-ms"]) / 1000
        elif "retry-after" in lowered:
            raw = lowered["retry-after"].strip()
            try:
                wait = float(raw)
            except ValueError:
                when = email.utils.parsedate_to_datetime(raw)
                wait = when.timestamp() - time.time()
    except (ValueError, TypeError, OverflowError):
        wait = None
    return should_retry, None if wait is None else max(0.0, wait)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause) if cause is not None and str(cause) else str(exc)
