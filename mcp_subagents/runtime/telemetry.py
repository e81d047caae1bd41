"""OpenTelemetry traces of subagent tasks, following the GenAI semantic conventions: one `invoke_agent` span per
task, a `chat` span per model request and an `execute_tool` span per tool call, built from the task's event stream.

Off by default. `--otel` (`pip install 'mcp-subagents[otel]'`) turns it on; only then is this module imported.
A task's span is a child of the request that launched it, so a host that sends `traceparent` in the request's
`_meta` sees the subagent inside its own trace; a nested task's span is a child of its parent task's span. Export
goes where the standard `OTEL_*` variables say (OTLP over HTTP by default; `OTEL_TRACES_EXPORTER=console` prints
spans to stderr).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..agent.loop import ModelResponded, ToolFinished, ToolStarted, TurnStarted
from ..core.messages import Usage
from ..core.version import __version__
from ..tasks.outcome import TaskOutcome
from ..tasks.record import Listener, TaskEvent, TaskRecord

logger = logging.getLogger(__name__)

SERVICE_NAME = "mcp-subagents"


def install_tracer_provider() -> trace.TracerProvider:
    """The process's tracer provider: one an embedding program installed, else a new SDK provider exporting where
    the `OTEL_*` variables say (made global, so the MCP SDK's own request spans join the same traces).

    Raises:
        ImportError: the `otel` extra is not installed.
    """
    current = trace.get_tracer_provider()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    if isinstance(current, TracerProvider):
        return current
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME, "service.version": __version__}))
    exporter: SpanExporter
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "console":
        exporter = ConsoleSpanExporter(out=sys.stderr)  # stdout carries the MCP protocol
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


class TaskTracer:
    """Makes the spans of every task; `TaskManager` calls `started` and `finished`."""

    def __init__(self, provider: trace.TracerProvider, *, provider_name: str = "") -> None:
        self._tracer = provider.get_tracer("mcp-subagents", __version__)
        self._provider_name = provider_name
        self._open: dict[str, _TaskSpans] = {}
        """The spans of the tasks still running, by task id: a nested task's span is opened under its parent's."""

    def started(self, record: TaskRecord, trace_meta: Mapping[str, Any] | None) -> Listener:
        """Open the task's span (parented on the launching request) and return the listener for its events."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": record.agent,
            # GenAI conventions v0.1.0 keep gen_ai.agent.id for a hosted agent's stable id, off internal spans.
            "mcp_subagents.task.id": record.id,
            "gen_ai.conversation.id": record.resumed_from or record.id,
            "gen_ai.request.model": record.model,
            "mcp_subagents.task.description": record.description,
        }
        if self._provider_name:
            attributes["gen_ai.provider.name"] = self._provider_name
        span = self._tracer.start_span(
            f"invoke_agent {record.agent}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            context=self._parent_task_context(record) or parent_context(trace_meta),
        )
        spans = _TaskSpans(self._tracer, span, record, self._provider_name)
        record.resources.telemetry = spans
        self._open[record.id] = spans
        return spans.on_event

    def _parent_task_context(self, record: TaskRecord) -> otel_context.Context | None:
        """The span of the task whose agent launched `record` (it runs until its nested tasks end); None for a task
        a host launched."""
        parent = self._open.get(record.parent) if record.parent is not None else None
        return None if parent is None else parent.context()

    def finished(self, record: TaskRecord, outcome: TaskOutcome) -> None:
        self._open.pop(record.id, None)
        spans = record.resources.telemetry
        if isinstance(spans, _TaskSpans):
            spans.finish(outcome)


def parent_context(trace_meta: Mapping[str, Any] | None) -> otel_context.Context | None:
    """The launching request's span when it is a real one (the MCP SDK's request span, itself parented on the
    host's `traceparent`); else the `traceparent` in the request's `_meta`; else None (a new trace)."""
    current = otel_context.get_current()
    if trace.get_current_span(current).get_span_context().is_valid:
        return current
    if trace_meta:
        extracted = propagate.extract(dict(trace_meta))
        if trace.get_current_span(extracted).get_span_context().is_valid:
            return extracted
    return None


class _TaskSpans:
    def __init__(self, tracer: trace.Tracer, span: Span, record: TaskRecord, provider_name: str) -> None:
        self._tracer = tracer
        self._span = span
        self._record = record
        self._provider_name = provider_name
        self._chat: Span | None = None
        self._tools: dict[str, Span] = {}

    def _child(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Span:
        return self._tracer.start_span(
            name, kind=kind, attributes=attributes, context=trace.set_span_in_context(self._span)
        )

    def context(self) -> otel_context.Context:
        """A context whose current span is the task's: what its nested tasks' spans start under."""
        return trace.set_span_in_context(self._span)

    async def on_event(self, event: TaskEvent) -> None:
        if isinstance(event, TurnStarted):
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": self._record.model,
                "mcp_subagents.turn": event.turn,
            }
            if self._provider_name:
                attributes["gen_ai.provider.name"] = self._provider_name
            self._chat = self._child(f"chat {self._record.model}", SpanKind.CLIENT, attributes)
        elif isinstance(event, ModelResponded) and self._chat is not None:
            self._chat.set_attributes(usage_attributes(event.usage))
            self._chat.set_attribute("gen_ai.response.finish_reasons", [event.stop_reason])
            self._chat.end()
            self._chat = None
        elif isinstance(event, ToolStarted):
            self._tools[event.call.id] = self._child(
                f"execute_tool {event.call.name}",
                SpanKind.INTERNAL,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.call.name,
                    "gen_ai.tool.call.id": event.call.id,
                    "gen_ai.tool.type": "function",
                },
            )
        elif isinstance(event, ToolFinished):
            span = self._tools.pop(event.call.id, None)
            if span is not None:
                if event.result.is_error:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(Status(StatusCode.ERROR, event.result.content[:200]))
                span.end()

    def finish(self, outcome: TaskOutcome) -> None:
        unfinished = f"the task ended ({outcome.state}) first"
        for span in (*(() if self._chat is None else (self._chat,)), *self._tools.values()):
            span.set_status(Status(StatusCode.ERROR, unfinished))
            span.end()
        self._chat, self._tools = None, {}
        span = self._span
        span.set_attribute("mcp_subagents.task.state", outcome.state)
        if outcome.counts is not None:
            span.set_attributes(usage_attributes(outcome.counts.usage))
            span.set_attribute("mcp_subagents.turns", outcome.counts.turns)
            span.set_attribute("mcp_subagents.tool_uses", outcome.counts.tool_uses)
            if outcome.counts.cost_usd is not None:
                span.set_attribute("mcp_subagents.cost_usd", outcome.counts.cost_usd)
        if outcome.state in ("failed", "interrupted"):
            span.set_attribute("error.type", outcome.failure or outcome.state)
            span.set_status(Status(StatusCode.ERROR, outcome.error or outcome.state))
        span.end()


def usage_attributes(usage: Usage) -> dict[str, int]:
    """`gen_ai.usage.*`: input tokens include the cached ones, as the conventions ask; the cache parts follow."""
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_tokens,
    }
