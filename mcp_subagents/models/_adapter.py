"""What the provider adapters share: settings, a lazily built SDK client, the fault policy and the error wording.

Fault policy: the SDK retries 408/409/429/5xx and connection errors itself (`max_retries`). An error that arrives in
the middle of a stream is not retried by the SDK, so the adapter retries it (`stream_error_retries`) unless its type
says a retry cannot help. One overall `deadline` bounds all of it. Whatever is left is raised as `ModelAPIError`.

No provider SDK is imported here: each adapter names its own SDK's client and exception classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import ClassVar, Generic, Protocol, TypedDict, TypeVar

import anyio
import httpx2

from ..errors import ModelAPIError
from ..redaction import Redactor
from .base import ModelRequest, ModelResponse

_MAX_BACKOFF = 4.0
_CONNECT_TIMEOUT = 10.0
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


class ClientOptions(TypedDict):
    """The keyword arguments that both SDKs' async clients are built with."""

    api_key: str
    base_url: str | None
    max_retries: int
    timeout: httpx2.Timeout
    _strict_response_validation: bool


class StreamBroken(Exception):
    """The response started (status 200) and then failed part-way: an error event or chunk, or a dropped connection."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


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
        max_retries: int = 2,
        request_timeout: float = 600.0,
        deadline: float = 900.0,
        stream_error_retries: int = 2,
        strict_validation: bool = False,
        stream_error_backoff: float = 0.5,
    ) -> None:
        self._api_key = api_key
        self._redact = Redactor((api_key,))
        self._base_url = base_url
        self._max_retries = max_retries
        self._request_timeout = request_timeout
        self._deadline = deadline
        self._stream_error_retries = stream_error_retries
        self._stream_error_backoff = stream_error_backoff
        self._strict_validation = strict_validation
        self._client: ClientT | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        try:
            with anyio.fail_after(self._deadline):
                return await self._request(request)
        except TimeoutError:
            raise ModelAPIError(
                f"{self._api} request timed out after {self._deadline:g} s (deadline over all retries)", retryable=True
            ) from None

    @abstractmethod
    async def _request(self, request: ModelRequest) -> ModelResponse:
        """The whole request, without the deadline; streams go through `_retrying_broken_streams`."""

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

    def _client_for_request(self) -> ClientT:
        if self._client is None:
            self._client = self._open_client()
        return self._client

    def _client_options(self) -> ClientOptions:
        return ClientOptions(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=self._max_retries,
            timeout=httpx2.Timeout(self._request_timeout, connect=min(_CONNECT_TIMEOUT, self._request_timeout)),
            _strict_response_validation=self._strict_validation,
        )

    async def _retrying_broken_streams(self, stream: Callable[[], Awaitable[T]]) -> T:
        """`stream()`, started again with a backoff while it breaks part-way; any SDK error as a `ModelAPIError`."""
        attempt = 0
        while True:
            try:
                return await stream()
            except StreamBroken as broken:
                if attempt >= self._stream_error_retries or self._error_type(broken.cause) in _FATAL_ERROR_TYPES:
                    raise self._error(broken.cause, mid_stream=True) from None
                await anyio.sleep(min(self._stream_error_backoff * 2**attempt, _MAX_BACKOFF))
                attempt += 1
            except self._sdk_error as exc:
                raise self._error(exc) from None
            except ValueError as exc:  # broken JSON in the body, or tool input the SDK cannot parse even partially
                raise self._make(f"{self._api} sent a stream that could not be parsed: {exc}", None, True) from None

    def _error(self, exc: Exception, *, mid_stream: bool = False) -> ModelAPIError:
        answered = self._provider_error(exc, mid_stream=mid_stream)
        if answered is not None:
            return answered
        if isinstance(exc, (self._sdk_timeout_error, httpx2.TimeoutException)):
            message = f"{self._api} request timed out (no response within {self._request_timeout:g} s)"
            return self._make(message, None, True)
        if isinstance(exc, (self._sdk_connection_error, httpx2.TransportError)):
            if mid_stream:
                return self._make(f"{self._api} stream was interrupted: {_cause(exc)}", None, True)
            return self._make(f"Could not connect to the {self._api} at {self._url()}: {_cause(exc)}", None, True)
        return self._make(f"{self._api} call failed: {exc}", None, False)

    def _status_error(self, status: int, error_type: str | None, detail: str, request_id: str | None) -> ModelAPIError:
        kind = f" {error_type}" if error_type else ""
        request = f" (request {request_id})" if request_id else ""
        if status == 401:
            message = f"{self._api} rejected the API key (401{kind}: {detail}){request}. Check {self._key_variable}."
        elif status in (400, 403, 404, 413, 422):
            message = f"{self._api} rejected the request ({status}{kind}: {detail}){request}"
        else:
            message = f"{self._api} error {status}{kind}: {detail}{request}"
        return self._make(message, status, status in (408, 409, 429) or status >= 500)

    def _stream_error(self, error_type: str | None, detail: str, request_id: str | None = None) -> ModelAPIError:
        kind = f" {error_type}" if error_type else ""
        request = f" (request {request_id})" if request_id else ""
        message = f"{self._api} stream error{kind}: {detail}{request}"
        return self._make(message, None, error_type not in _FATAL_ERROR_TYPES)

    async def _require_event_stream(self, response: httpx2.Response) -> None:
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

    def _make(self, message: str, status_code: int | None, retryable: bool) -> ModelAPIError:
        return ModelAPIError(self._redact(message), status_code=status_code, retryable=retryable)

    def _url(self) -> str:
        return str(self._client.base_url) if self._client is not None else (self._base_url or "the default URL")


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause) if cause is not None and str(cause) else str(exc)
