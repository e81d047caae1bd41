"""Deterministic models for tests and demos: `ScriptedModel` plays a script, `FunctionModel` calls a function.

Shipped in the package (like pydantic-ai's TestModel) so users can test their own agent files without a key.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from ..core.errors import ModelAPIError
from ..core.json_values import JsonObject
from ..core.messages import TextPart, ToolCall, Usage
from .base import ModelRequest, ModelResponse, StopReason

Responder = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]
ScriptStep = ModelResponse | Exception | Responder

_call_ids = itertools.count(1)


def text(content: str, *, stop_reason: StopReason = "end_turn", usage: Usage | None = None) -> ModelResponse:
    """A reply that is only text."""
    return ModelResponse(parts=(TextPart(text=content),), stop_reason=stop_reason, usage=usage or _estimate(content))


def tool_call(name: str, arguments: JsonObject, *, id: str | None = None, say: str = "") -> ModelResponse:
    """A reply that calls one tool, optionally after some text."""
    return tool_calls((name, arguments, id), say=say)


def tool_calls(*calls: tuple[str, JsonObject, str | None], say: str = "") -> ModelResponse:
    """A reply that calls several tools in one turn."""
    parts: list[TextPart | ToolCall] = [TextPart(text=say)] if say else []
    parts += [ToolCall(id=cid or f"call_{next(_call_ids)}", name=name, arguments=args) for name, args, cid in calls]
    return ModelResponse(parts=tuple(parts), stop_reason="tool_use", usage=_estimate(say))


def _estimate(content: str) -> Usage:
    return Usage(input_tokens=10, output_tokens=max(1, len(content) // 4))


class UnexpectedModelCall(ModelAPIError):
    """The script ran out: the loop asked for one more response than the test expected."""


@dataclass
class ScriptedModel:
    """Answers each request with the next step of a script; records every request.

    A step is a `ModelResponse`, an exception to raise, or a function of the request returning a response.
    """

    __test__ = False
    steps: list[ScriptStep] = field(default_factory=lambda: [])
    requests: list[ModelRequest] = field(default_factory=lambda: [])
    provider: str = "scripted"

    def __init__(self, steps: Iterable[ScriptStep] = (), *, provider: str = "scripted") -> None:
        self.steps = list(steps)
        self.requests = []
        self.provider = provider

    def extend(self, *steps: ScriptStep) -> None:
        """Add steps to the end of the script."""
        self.steps.extend(steps)

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        """Record the request and answer it with the script's next step.

        Raises:
            UnexpectedModelCall: the script has no step left.
        """
        self.requests.append(request)
        if not self.steps:
            raise UnexpectedModelCall(f"Scripted model: no step left for request #{len(self.requests)}")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ModelResponse):
            return step
        result = step(request)
        return await result if inspect.isawaitable(result) else result

    def assert_complete(self) -> None:
        """Fail if some steps of the script were never requested."""
        if self.steps:
            raise AssertionError(f"{len(self.steps)} scripted step(s) were never requested")


@dataclass
class FunctionModel:
    """A model that is a function of the request (sync or async)."""

    __test__ = False
    function: Responder
    provider: str = "function"

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        """The function's answer to the request, awaited if it is a coroutine."""
        result = self.function(request)
        return await result if inspect.isawaitable(result) else result
