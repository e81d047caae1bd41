"""OpenTelemetry traces with an in-memory exporter: one `invoke_agent` span per task with `chat` and
`execute_tool` children carrying the GenAI attributes, joined to the host's `traceparent` (both protocol eras);
nothing imported and nothing traced when off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcp_subagents.core.errors import ModelAPIError
from mcp_subagents.core.messages import TextPart, ToolCall, Usage, UserMessage
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from tests.support import MODES, make_settings, server_environment, text_of

pytestmark = pytest.mark.anyio

HOST_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{HOST_TRACE}-00f067aa0ba902b7-01"
USAGE = Usage(input_tokens=100, output_tokens=20, cache_creation_tokens=300, cache_read_tokens=400)


def respond(request: ModelRequest) -> ModelResponse:
    if len(request.messages) == 1:
        calls = (
            ToolCall(id="call-glob", name="Glob", arguments={"pattern": "*"}),
            ToolCall(id="call-read", name="Read", arguments={"file_path": "/nowhere/at/all"}),
        )
        return ModelResponse(parts=(TextPart(text="Looking."), *calls), stop_reason="tool_use", usage=USAGE)
    return ModelResponse(parts=(TextPart(text="Done."),), stop_reason="end_turn", usage=USAGE)


def traced_app(tmp_path: Path) -> tuple[Subagents, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    return Subagents(settings, model=FunctionModel(respond), environ={}, tracer_provider=provider), exporter


def by_operation(spans: tuple[ReadableSpan, ...], operation: str) -> list[ReadableSpan]:
    return [span for span in spans if (span.attributes or {}).get("gen_ai.operation.name") == operation]


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_is_one_invoke_agent_span_with_chat_and_tool_children_in_the_hosts_trace(
    tmp_path: Path, mode: str
) -> None:
    app, exporter = traced_app(tmp_path)
    async with app.running(), Client(build_server(app), mode=mode) as client:
        result = await client.call_tool(
            "Task",
            {"description": "look", "prompt": "p", "subagent_type": "general-purpose"},
            meta={"traceparent": TRACEPARENT},
        )
    assert "Done." in text_of(result)
    spans = exporter.get_finished_spans()
    (agent,) = by_operation(spans, "invoke_agent")
    chats = by_operation(spans, "chat")
    tools = by_operation(spans, "execute_tool")
    assert agent.name == "invoke_agent general-purpose" and agent.kind == SpanKind.INTERNAL
    assert agent.context is not None and f"{agent.context.trace_id:032x}" == HOST_TRACE  # joined to the host
    attributes = dict(agent.attributes or {})
    assert attributes["gen_ai.agent.name"] == "general-purpose"
    assert "gen_ai.agent.id" not in attributes  # GenAI conventions v0.1.0: not on internal agent spans
    assert attributes["mcp_subagents.task.id"] == attributes["gen_ai.conversation.id"]  # a new task: its own id
    assert attributes["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert attributes["gen_ai.usage.input_tokens"] == 2 * (100 + 300 + 400)  # cached tokens included
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 800
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 600
    cost = app.prices.table().cost("claude-sonnet-4-6", USAGE)
    assert cost is not None
    assert attributes["mcp_subagents.cost_usd"] == pytest.approx(cost * 2)
    assert attributes["mcp_subagents.task.state"] == "completed"

    assert [span.name for span in chats] == ["chat claude-sonnet-4-6"] * 2
    assert all(span.kind == SpanKind.CLIENT for span in chats)
    assert {span.name for span in tools} == {"execute_tool Glob", "execute_tool Read"}
    for child in (*chats, *tools):
        assert child.parent is not None and agent.context is not None
        assert child.parent.span_id == agent.context.span_id
    chat = dict(chats[0].attributes or {})
    assert chat["gen_ai.usage.input_tokens"] == 800 and chat["gen_ai.response.finish_reasons"] == ("tool_use",)
    read = next(span for span in tools if span.name == "execute_tool Read")
    assert dict(read.attributes or {})["gen_ai.tool.call.id"] == "call-read"
    assert read.status.status_code == StatusCode.ERROR  # the file does not exist: the tool call failed


async def test_a_failed_task_marks_its_span_and_its_open_model_request_as_errors(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def overloaded(_request: ModelRequest) -> ModelResponse:
        raise ModelAPIError("Anthropic API is overloaded (529)")

    app = Subagents(make_settings(tmp_path), model=FunctionModel(overloaded), environ={}, tracer_provider=provider)
    async with app.running():
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    (agent,) = by_operation(exporter.get_finished_spans(), "invoke_agent")
    (chat,) = by_operation(exporter.get_finished_spans(), "chat")
    assert agent.status.status_code == StatusCode.ERROR and "overloaded" in (agent.status.description or "")
    assert dict(agent.attributes or {})["error.type"] == "error"
    assert chat.status.status_code == StatusCode.ERROR  # ended with the task, not left open


def test_traces_are_off_by_default_and_load_nothing(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from mcp_subagents.cli import main\n"
        "import mcp_subagents.mcp.server, mcp_subagents.runtime.service\n"
        "import mcp_subagents.tasks.manager, mcp_subagents.mcp.foreground\n"
        "telemetry = 'mcp_subagents.runtime.telemetry'\n"
        "loaded = [m for m in sys.modules if m == telemetry or m.startswith('opentelemetry.sdk')]\n"
        "print(loaded)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path
    )
    assert result.stdout.strip() == "[]"


def test_otel_on_exports_to_stderr_never_to_stdout_when_asked_for_the_console(tmp_path: Path) -> None:
    probe = (
        "from mcp_subagents.runtime.telemetry import install_tracer_provider\n"
        "provider = install_tracer_provider()\n"
        "with provider.get_tracer('probe').start_as_current_span('invoke_agent probe'):\n"
        "    pass\n"
        "provider.shutdown()\n"
    )
    environ = server_environment(tmp_path, OTEL_TRACES_EXPORTER="console")
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, env=environ
    )
    assert result.stdout == ""  # stdout is the MCP protocol
    assert '"name": "invoke_agent probe"' in result.stderr and '"service.name": "mcp-subagents"' in result.stderr


def relay_once(request: ModelRequest) -> ModelResponse:
    """The task a host launched starts one nested task; the nested task answers at once."""
    first = request.messages[0]
    if isinstance(first, UserMessage) and str(first.content).startswith("nested"):
        return ModelResponse(parts=(TextPart(text="nested done"),), stop_reason="end_turn", usage=USAGE)
    if len(request.messages) == 1:
        arguments = {"description": "go down", "prompt": "nested work", "subagent_type": "general-purpose"}
        call = ToolCall(id="call-task", name="Agent", arguments=arguments)
        return ModelResponse(parts=(call,), stop_reason="tool_use", usage=USAGE)
    return ModelResponse(parts=(TextPart(text="Done."),), stop_reason="end_turn", usage=USAGE)


async def test_a_nested_tasks_span_is_a_child_of_its_parent_tasks_span(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = Subagents(make_settings(tmp_path), model=FunctionModel(relay_once), environ={}, tracer_provider=provider)
    async with app.running():
        record = app.launch(TaskRequest(description="d", prompt="top work", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    agents = by_operation(exporter.get_finished_spans(), "invoke_agent")
    assert len(agents) == 2
    nested = next(span for span in agents if span.context is not None and span.parent is not None)
    top = next(span for span in agents if span is not nested)
    assert top.parent is None and top.context is not None and nested.parent is not None
    assert nested.parent.span_id == top.context.span_id  # under the task that launched it, not beside it
    assert nested.context is not None and nested.context.trace_id == top.context.trace_id
