"""Model processes (`--model-processes`): the overflow of a busy server's model requests is sent from processes of
their own, which run the same adapter, against the fake API over real HTTP."""

from __future__ import annotations

import itertools
import logging
import os
import re
import signal
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client

from mcp_subagents.config.settings import Settings
from mcp_subagents.core.errors import ModelAPIError, PromptTooLongError
from mcp_subagents.core.messages import TextPart, ToolCall
from mcp_subagents.core.processes import process_alive
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.anthropic import AnthropicModel
from mcp_subagents.models.base import ModelResponse
from mcp_subagents.models.providers import ProviderConfig, ProviderName
from mcp_subagents.models.spread import SPREAD_AT, SpreadModel
from tests.fakes.fake_llm import FakeLLM, Step, error, hang, text, tool_use, turn
from tests.models.adapters import ANTHROPIC, READ
from tests.processes import wait_until_gone
from tests.support import make_settings, provider_environment, running_app, text_of, write_agent

pytestmark = pytest.mark.anyio

ask = ANTHROPIC.ask


@asynccontextmanager
async def spread_model(
    fake: FakeLLM, *, spread_at: int = 0, processes: int = 1, config: ProviderConfig | None = None
) -> AsyncGenerator[SpreadModel]:
    """A SpreadModel over the fake API that sends every request beyond `spread_at` in flight to a model process."""
    options = ANTHROPIC.options(fake.url)
    local = AnthropicModel(**options)
    async with anyio.create_task_group() as group:
        model = SpreadModel(
            local,
            config=config or ProviderConfig(name="anthropic", api_key=ANTHROPIC.key, base_url=options["base_url"]),
            deadline=30,
            max_retries=0,
            processes=processes,
            start_soon=group.start_soon,
            spread_at=spread_at,
        )
        try:
            yield model
        finally:
            await model.aclose()
            group.cancel_scope.cancel()


async def ready_process(model: SpreadModel, fake: FakeLLM) -> int:
    """Start the model process with a first request and wait until it is ready; returns its pid."""
    fake.push(turn(text("warming")))
    await model.request(ask())  # sent from the server process while the model process starts
    await processes_ready(model, 1)
    return model.model_processes[0].process.pid


async def processes_ready(model: SpreadModel, count: int) -> None:
    with anyio.fail_after(60):
        while len(model.model_processes) < count:
            await model.wait_for_change()


def arrivals(fake: FakeLLM, count: int, answer: Step) -> threading.Event:
    """Answer every request with `answer`; the event is set when `count` requests have reached the fake API."""
    arrived = threading.Event()
    seen = itertools.count(1)

    def step(_body: Any) -> Step:
        if next(seen) >= count:
            arrived.set()
        return answer

    fake.default = step
    return arrived


async def wait_for(event: threading.Event) -> None:
    assert await anyio.to_thread.run_sync(event.wait, 10), "the requests did not reach the fake API"


async def test_a_request_beyond_the_threshold_is_answered_by_a_model_process(fake: FakeLLM) -> None:
    async with spread_model(fake) as model:
        pid = await ready_process(model, fake)
        fake.push(turn(text("Let me look."), tool_use("Read", {"path": "a.md"}, id="toolu_7")))
        response = await model.request(ask(tools=(READ,)))
        assert pid != os.getpid() and process_alive(pid)
        assert response.parts == (
            TextPart(text="Let me look."),
            ToolCall(id="toolu_7", name="Read", arguments={"path": "a.md"}),
        )
        assert response.stop_reason == "tool_use"
        # The process sent it as the server's own adapter would: the key, the tools, the conversation.
        sent = fake.requests[-1]
        assert sent["headers"]["x-api-key"] == ANTHROPIC.key
        assert [tool["name"] for tool in sent["body"]["tools"]] == ["Read"]
        assert model.model_processes[0].in_flight == 0
    await wait_until_gone(pid)


async def test_the_providers_errors_arrive_as_the_adapter_raises_them(fake: FakeLLM) -> None:
    async with spread_model(fake) as model:
        await ready_process(model, fake)
        fake.push(error(401, "authentication_error", "invalid x-api-key"))
        rejected = await ANTHROPIC.failure(
            cast(AnthropicModel, model.local)
        )  # the same answer, once from the server process
        fake.push(error(401, "authentication_error", "invalid x-api-key"))
        with pytest.raises(ModelAPIError) as remote:
            await model.request(ask())
        assert type(remote.value) is ModelAPIError
        request_number = re.compile(r"req_fake_\d+")
        assert request_number.sub("req", remote.value.message) == request_number.sub("req", rejected.message)
        assert (remote.value.status_code, remote.value.retryable) == (401, False)
        assert ANTHROPIC.key not in remote.value.message
        fake.push(error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"))
        with pytest.raises(PromptTooLongError):
            await model.request(ask())


async def test_a_cancelled_request_stops_in_the_model_process_too(fake: FakeLLM) -> None:
    async with spread_model(fake) as model:
        await ready_process(model, fake)
        process = model.model_processes[0]
        fake.push(hang())
        with anyio.move_on_after(0.5) as waited:
            await model.request(ask())
        assert waited.cancelled_caught
        assert process.in_flight == 0
        fake.push(turn(text("still here")))
        with anyio.fail_after(10):
            response = await model.request(ask())
        assert response.parts == (TextPart(text="still here"),)


async def test_a_request_whose_model_process_dies_is_sent_again_from_the_server(
    fake: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    async with spread_model(fake) as model:
        pid = await ready_process(model, fake)
        reached = threading.Event()

        def stall(_body: Any) -> Step:
            reached.set()
            return hang()

        fake.push(stall, turn(text("answered after all")))
        answers: list[ModelResponse] = []
        async with anyio.create_task_group() as group:

            async def ask_once() -> None:
                answers.append(await model.request(ask()))

            group.start_soon(ask_once)
            await wait_for(reached)  # the model process sent it, and waits for the answer
            os.kill(pid, signal.SIGKILL)
        assert answers[0].parts == (TextPart(text="answered after all"),)
        assert "sent again from the server process" in caplog.text
        # The request learns of the death before the process is taken off the ready list: wait for that.
        with anyio.fail_after(60):
            while any(ready.process.pid == pid for ready in model.model_processes):
                await model.wait_for_change()
        # The next overflow starts a new process.
        new_pid = await ready_process(model, fake)
        assert new_pid != pid


async def test_a_model_process_that_cannot_start_leaves_the_requests_to_the_server(
    fake: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    broken = ProviderConfig(name=cast(ProviderName, "no-such-provider"), api_key="k", base_url=None)
    caplog.set_level(logging.WARNING)
    async with spread_model(fake, config=broken) as model:
        fake.default = turn(text("from the server"))
        for _ in range(3):
            response = await model.request(ask())
            assert response.parts == (TextPart(text="from the server"),)
        with anyio.fail_after(60):
            while "could not build the provider's client" not in caplog.text:
                await model.wait_for_change()
        assert await model.request(ask()) is not None
        assert not model.model_processes
        assert caplog.text.count("could not build the provider's client") == 1


async def test_below_the_threshold_no_process_starts(fake: FakeLLM) -> None:
    fake.latency = 0.2
    fake.default = turn(text("ok"))
    async with spread_model(fake, spread_at=4) as model:
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(model.request, ask())
        assert not model.model_processes
        assert len(fake.requests) == 4


async def test_requests_beyond_the_threshold_go_to_the_least_busy_process(fake: FakeLLM) -> None:
    fake.default = turn(text("ok"))
    async with spread_model(fake, spread_at=1, processes=2) as model:
        fake.latency = 0.3
        async with anyio.create_task_group() as group:  # the second request overflows: both processes start
            for _ in range(2):
                group.start_soon(model.request, ask())
        await processes_ready(model, 2)
        fake.latency = 0.5
        all_arrived = arrivals(fake, 5, turn(text("ok")))
        loads: list[int] = []
        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(model.request, ask())
            await wait_for(all_arrived)
            loads += sorted(process.in_flight for process in model.model_processes)
        assert loads == [2, 2]  # one request in the server process, two in each model process


def test_the_default_leaves_a_core_to_the_event_loop_and_one_to_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for cpus, processes in ((9, 4), (4, 2), (3, 1), (2, 0), (1, 0)):

        def affinity(_pid: int, cpus: int = cpus) -> set[int]:
            return set(range(cpus))

        monkeypatch.setattr(os, "sched_getaffinity", affinity)
        assert Settings().model_processes == processes


async def test_a_busy_server_answers_tasks_from_its_model_process(tmp_path: Path, fake: FakeLLM) -> None:
    settings = make_settings(tmp_path, model_processes=1, max_concurrent=SPREAD_AT + 4)
    assert settings.cwd is not None
    write_agent(settings.cwd / ".claude" / "agents", "helper")

    def echo(body: Any) -> Step:
        prompt = body["messages"][0]["content"][-1]["text"]
        return turn(text(f"done: {prompt}"))

    fake.default = echo
    fake.latency = 0.3
    environ = provider_environment(fake, ANTHROPIC.key)
    async with running_app(settings, environ=environ) as app, Client(build_server(app), mode="legacy") as client:

        async def wave(label: str) -> list[str]:
            answers: dict[int, str] = {}

            async def one(number: int) -> None:
                arguments = {"description": "job", "prompt": f"{label} {number}", "subagent_type": "helper"}
                answers[number] = text_of(await client.call_tool("Task", arguments))

            async with anyio.create_task_group() as group:
                for number in range(SPREAD_AT + 2):
                    group.start_soon(one, number)
            return [answers[number] for number in range(SPREAD_AT + 2)]

        assert all(f"done: first {n}" in answer for n, answer in enumerate(await wave("first")))
        model = await app.model()
        assert isinstance(model, SpreadModel)
        await processes_ready(model, 1)
        process = model.model_processes[0]
        assert all(f"done: second {n}" in answer for n, answer in enumerate(await wave("second")))
        assert process.answered >= 2
        pid = process.process.pid
    await wait_until_gone(pid)  # the server's end ends its model processes
