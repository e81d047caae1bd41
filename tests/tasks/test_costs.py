"""What tasks cost: the price table, settings overrides, `cost_usd` in results, TaskOutput and the transcript,
budgets that stop a task (with a warning at 80%), budgets over a task tree, and the ceiling price a budget counts
for a model without one."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.errors import DefinitionError
from mcp_subagents.core.messages import TextPart, ToolCall, ToolResultMessage, Usage, UserMessage
from mcp_subagents.definitions.parse import parse_definition
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.pricing import LIST_PRICES, ModelPrice, PriceFiles, PriceTable, format_usd
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel
from mcp_subagents.render import outcome_text, status_text
from mcp_subagents.runtime.request import TaskRequest
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.fake_llm import text as fake_text
from tests.fakes.fake_llm import tool_use as fake_tool_use
from tests.fakes.fake_llm import turn as fake_turn
from tests.support import connected, make_settings, provider_environment, running_app, text_of, write_agent

SONNET_4_6 = "claude-sonnet-4-6"
TURN_USAGE = Usage(input_tokens=1000, output_tokens=1000, cache_creation_tokens=0, cache_read_tokens=0)
"""$0.018 a turn at Sonnet's $3 / $15 per million tokens."""


def test_cost_arithmetic_covers_every_kind_of_token() -> None:
    sonnet = ModelPrice.of(3, 15)
    assert (sonnet.cache_write_5m, sonnet.cache_write_1h, sonnet.cache_read) == (3.75, 6, pytest.approx(0.3))
    usage = Usage(input_tokens=1000, output_tokens=2000, cache_creation_tokens=3000, cache_read_tokens=4000)
    # 1000 x $3 + 2000 x $15 + 3000 x $3.75 + 4000 x $0.30, per million
    assert sonnet.cost(usage) == pytest.approx(0.04545)
    assert LIST_PRICES["claude-haiku-4-5"].cost(Usage(input_tokens=1_000_000)) == pytest.approx(1.0)
    assert LIST_PRICES["claude-opus-4-1"].cost(Usage(output_tokens=1_000_000)) == pytest.approx(75.0)


def test_snapshots_and_cloud_ids_cost_what_their_model_costs_and_unknown_models_have_no_price() -> None:
    table = PriceTable()
    for model_id in ("claude-sonnet-4-5-20250929", "us.anthropic.claude-sonnet-4-5-v1:0", "claude-sonnet-4-5@20250929"):
        assert table.price(model_id) == LIST_PRICES["claude-sonnet-4-5"]
    assert table.cost("llama3.3", TURN_USAGE) is None
    assert table.price("claude-fable-5-2") is None  # no published price: tokens only, never a made-up figure


def test_settings_file_prices_add_custom_models_and_override_known_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "permissions": {"allow": []},
                "modelPrices": {
                    "llama3.3": {"input": 0.5, "output": 1.5},
                    "claude-sonnet-4-6": {"input": 2, "output": 10, "cacheRead": 0.1},
                    "broken": {"input": "cheap", "output": 1},
                    "partial": {"output": 3},
                },
            }
        ),
        encoding="utf-8",
    )
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"modelPrices": {"llama3.3": {"input": 1, "output": 2}}}), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        table = PriceFiles(settings, policy).table()
    llama = table.price("llama3.3")
    assert llama is not None and (llama.input, llama.output, llama.basis) == (1, 2, "settings")  # policy wins
    sonnet = table.price("claude-sonnet-4-6-20260101")
    assert sonnet is not None and (sonnet.input, sonnet.cache_read, sonnet.cache_write_5m) == (2, 0.1, 2.5)
    assert table.price("broken") is None and table.price("partial") is None
    assert "modelPrices.broken: input must be a number" in caplog.text
    assert "modelPrices.partial: needs both input and output" in caplog.text


def test_costs_read_well_for_a_person() -> None:
    assert [format_usd(x) for x in (0, 0.000105, 0.0123456, 3.5, 12.345, 1e-9)] == [
        "$0",
        "$0.000105",
        "$0.0123",
        "$3.5000",
        "$12.35",
        "<$0.000001",
    ]


def turn(usage: Usage = TURN_USAGE, *, call: str | None = "Glob") -> ModelResponse:
    if call is None:
        return ModelResponse(parts=(TextPart(text="all done"),), stop_reason="end_turn", usage=usage)
    parts = (ToolCall(id=f"c{id(usage)}", name=call, arguments={"pattern": "*.md"}),)
    return ModelResponse(parts=parts, stop_reason="tool_use", usage=usage)


@pytest.mark.anyio
async def test_results_and_transcripts_carry_the_cost(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model=SONNET_4_6)
    model = ScriptedModel([turn(), turn(call=None)])
    async with running_app(settings, model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    assert record.model == SONNET_4_6 and record.outcome is not None
    assert record.outcome.counts is not None and record.outcome.counts.cost_usd == pytest.approx(0.036)
    text = outcome_text(record, record.outcome, max_chars=None)
    assert "cost_usd: 0.036;" in text
    lines = [json.loads(line) for line in record.transcript.path.read_text().splitlines()]
    assert lines[0]["model"] == SONNET_4_6
    usage_lines = [line for line in lines if line["type"] == "usage"]
    assert [line["cost_usd"] for line in usage_lines] == [pytest.approx(0.018), pytest.approx(0.036)]
    assert usage_lines[-1]["usage"]["output_tokens"] == 2000
    assert lines[-1]["outcome"]["counts"]["cost_usd"] == pytest.approx(0.036)


@pytest.mark.anyio
async def test_a_model_without_a_price_reports_tokens_only(tmp_path: Path) -> None:
    model = ScriptedModel([turn(call=None)])
    async with running_app(make_settings(tmp_path, model="my-local-model"), model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    assert record.outcome is not None
    text = outcome_text(record, record.outcome, max_chars=None)
    assert "output_tokens: 1000" in text and "cost_usd" not in text


@pytest.mark.anyio
async def test_task_output_says_starting_then_shows_turns_tokens_and_cost(tmp_path: Path) -> None:
    release_first, first_asked, second_asked, release_second = (anyio.Event() for _ in range(4))

    async def respond(request: ModelRequest) -> ModelResponse:
        if not first_asked.is_set():
            first_asked.set()
            await release_first.wait()
            return turn()
        second_asked.set()
        await release_second.wait()
        return turn(call=None)

    async with running_app(make_settings(tmp_path, model=SONNET_4_6), model=FunctionModel(respond)) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await first_asked.wait()
        record.progress.turn = 0  # as it stands while the provider SDK is still loading, before turn 1
        starting = status_text(record, queue=None, recent_output="", max_result_chars=1000)
        assert "<progress>starting, 0 s</progress>" in starting and "turn 0 of 0" not in starting
        record.progress.turn = 1
        release_first.set()
        with anyio.fail_after(10):
            await second_asked.wait()
        running = status_text(record, queue=None, recent_output="", max_result_chars=1000)
        assert "<progress>turn 2 of 50, 1 tool use(s), 2000 tokens, cost_usd 0.018," in running
        release_second.set()
        with anyio.fail_after(10):
            await record.done.wait()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("server_budget", "agent_budget", "source"),
    [(0.04, None, "--max-budget-usd"), (1.0, 0.04, "maxBudgetUsd of agent spender"), (0.04, 2.0, "--max-budget-usd")],
)
async def test_a_task_past_its_budget_ends_with_an_error_naming_the_budget_and_the_spend(
    tmp_path: Path, server_budget: float, agent_budget: float | None, source: str
) -> None:
    extra = f"maxBudgetUsd: {agent_budget}\n" if agent_budget else ""
    settings = make_settings(tmp_path, model=SONNET_4_6, max_budget_usd=server_budget)
    write_agent(settings.working_directory / ".claude" / "agents", "spender", extra=extra)
    model = ScriptedModel([turn() for _ in range(10)])
    async with running_app(settings, model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="spender"))
        with anyio.fail_after(10):
            await record.done.wait()
    # $0.018 a turn: 0.036 passes 80% of 0.04 (a warning), 0.054 passes the budget: no fourth request
    assert len(model.requests) == 3
    outcome = record.outcome
    assert outcome is not None and outcome.state == "failed" and outcome.failure == "budget"
    text = outcome_text(record, outcome, max_chars=None)
    assert text.startswith('<task_error agent="spender">Task stopped at its budget: it spent $0.054 of the $0.04')
    assert f"allowed by {source}." in text and "cost_usd: 0.054;" in text
    warnings = [
        line for line in record.output_path.read_text().splitlines() if line.startswith("[turn") and "budget:" in line
    ]
    assert warnings == [
        f"[turn 2] budget: spent $0.036 of its $0.04 budget (90%, {source}); it stops when the budget is spent"
    ]
    notices = [json.loads(line) for line in record.transcript.path.read_text().splitlines() if '"notice"' in line]
    assert [notice["kind"] for notice in notices] == ["budget_warning"]


def test_max_budget_usd_in_an_agent_file_is_parsed_and_a_bad_value_rejects_the_file() -> None:
    good = parse_definition("---\nname: a\ndescription: d\nmaxBudgetUsd: 0.25\n---\nBody\n", path=None, source="user")
    assert good.max_budget_usd == 0.25 and good.unknown_fields == ()
    for bad in ("lots", "-1", "0"):
        with pytest.raises(DefinitionError, match="maxBudgetUsd must be a positive amount of USD"):
            parse_definition(f"---\nname: a\ndescription: d\nmaxBudgetUsd: {bad}\n---\nB\n", path=None, source="user")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_host_sees_the_cost_and_the_budget_error_over_mcp(tmp_path: Path, mode: str) -> None:
    settings = replace(make_settings(tmp_path, model=SONNET_4_6), max_budget_usd=0.04)
    progress_lines: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_lines.append(message or "")

    async with connected(settings, mode=mode, model=ScriptedModel([turn(), turn(), turn()])) as client:
        result = await client.call_tool(
            "Task",
            {"description": "d", "prompt": "p", "subagent_type": "general-purpose"},
            progress_callback=on_progress,
        )
    text = text_of(result)
    assert result.is_error
    assert "Task stopped at its budget: it spent $0.054 of the $0.04 allowed by --max-budget-usd" in text
    assert "cost_usd: 0.054;" in text
    assert "turn 2: budget: spent $0.036 of its $0.04 budget (90%, --max-budget-usd)" in " | ".join(progress_lines)


@pytest.mark.anyio
async def test_what_webfetch_asks_its_small_model_is_part_of_the_cost(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    page = b"<html><body><p>Ships on May 4.</p></body></html>"

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/notes"
    fake.push(
        fake_turn(fake_tool_use("WebFetch", {"url": url, "prompt": "When?"}), input_tokens=1000, output_tokens=100),
        fake_turn(fake_text("May 4."), input_tokens=2000, output_tokens=200),  # WebFetch's small model
        fake_turn(fake_text("It ships on May 4."), input_tokens=1000, output_tokens=100),
    )
    settings = make_settings(tmp_path, model=SONNET_4_6, permission_mode="bypassPermissions")
    environ = provider_environment(fake)
    try:
        async with running_app(settings, environ=environ) as app:
            record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
            with anyio.fail_after(30):
                await record.done.wait()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert [request["body"]["model"] for request in fake.requests] == [
        SONNET_4_6,
        "claude-haiku-5-5",
        SONNET_4_6,
    ]
    assert record.outcome is not None and record.outcome.counts is not None
    # Sonnet 4.6: 2 x (1000 x $3 + 100 x $15); Haiku 5.5 (tier price $1 / $5): 2000 x $1 + 200 x $5; per million
    assert record.outcome.counts.cost_usd == pytest.approx(2 * 0.0045 + 0.003)
    assert record.outcome.counts.usage.input_tokens == 2000  # the conversation's own tokens


def test_the_ceiling_is_the_dearest_known_price_of_each_kind_of_token() -> None:
    ceiling = PriceTable().ceiling()
    assert (ceiling.input, ceiling.output, ceiling.cache_write_5m, ceiling.cache_read) == (15, 75, 18.75, 1.5)
    assert ceiling.basis == "ceiling"
    dearer = PriceTable({"house-model": ModelPrice.of(2, 120)}).ceiling()
    assert (dearer.input, dearer.output) == (15, 120)


@pytest.mark.anyio
async def test_what_tools_ask_a_model_without_a_price_counts_at_the_ceiling_only_under_a_budget() -> None:
    from mcp_subagents.models.pricing import MeteredModel, SideSpend

    request = ModelRequest(model="my-local-model", system="", messages=(), tools=())
    counted = {}
    for under_budget in (False, True):
        spend = SideSpend()
        unpriced = PriceTable().ceiling() if under_budget else None
        await MeteredModel(ScriptedModel([turn(call=None)]), PriceTable(), spend, unpriced=unpriced).request(request)
        counted[under_budget] = spend.cost_usd
    assert counted == {False: 0.0, True: pytest.approx(0.09)}  # 1000 tokens in at $15, 1000 out at $75, per million


@pytest.mark.anyio
async def test_a_model_without_a_price_counts_at_the_ceiling_under_a_budget(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model="my-local-model", max_budget_usd=0.2)
    model = ScriptedModel([turn() for _ in range(10)])  # $0.09 a turn at $15 / $75 per million tokens
    async with running_app(settings, model=model) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    assert len(model.requests) == 3
    assert record.outcome is not None and record.outcome.failure == "budget"
    assert "it spent $0.27 of the $0.2 allowed by --max-budget-usd" in outcome_text(
        record, record.outcome, max_chars=None
    )
    lines = record.output_path.read_text(encoding="utf-8").splitlines()
    note = "[budget] priced as the dearest known model, $15/$75 per million tokens, because my-local-model has no price"
    assert lines.count(note) == 1


def spending_tree(*agents: str) -> FunctionModel:
    """The root launches a nested task of each of `agents`, one after another, then says "done"; a nested task makes
    one request and answers. Every request uses TURN_USAGE ($0.018 on Sonnet 4.6)."""

    def respond(request: ModelRequest) -> ModelResponse:
        first = request.messages[0]
        if isinstance(first, UserMessage) and first.content == "child":
            return turn(call=None)
        done = sum(isinstance(message, ToolResultMessage) for message in request.messages)
        if done == len(agents):
            return turn(call=None)
        launch = {"description": "d", "prompt": "child", "subagent_type": agents[done]}
        return ModelResponse(
            parts=(ToolCall(id=f"t{done}", name="Agent", arguments=launch),), stop_reason="tool_use", usage=TURN_USAGE
        )

    return FunctionModel(respond)


@pytest.mark.anyio
async def test_a_nested_tasks_budget_is_the_lower_of_its_own_and_what_remains_of_its_parents(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model=SONNET_4_6, max_budget_usd=0.1)
    write_agent(settings.working_directory / ".claude" / "agents", "frugal", extra="maxBudgetUsd: 0.01\n")
    async with running_app(settings, model=spending_tree("frugal", "general-purpose")) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
        children = [app.tasks.get(child, principal=record.owner) for child in record.children]
    assert record.outcome is not None and record.outcome.state == "completed"
    # Three requests of the root and one of each nested task; each nested result shows what it spent itself.
    assert record.outcome.counts is not None and record.outcome.counts.cost_usd == pytest.approx(5 * 0.018)
    assert [child.cost_usd() for child in children] == [pytest.approx(0.018)] * 2
    budgets = [json.loads(child.transcript.path.read_text().splitlines()[0])["budget_usd"] for child in children]
    assert budgets == [pytest.approx(0.01), pytest.approx(0.1 - 3 * 0.018)]  # its own, then what remained
    frugal = children[0].outcome
    assert frugal is not None and frugal.failure == "budget" and frugal.budget_source == "maxBudgetUsd of agent frugal"


@pytest.mark.anyio
async def test_the_parent_is_warned_when_its_nested_tasks_pass_most_of_its_budget(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, model=SONNET_4_6, max_budget_usd=0.08)
    async with running_app(settings, model=spending_tree("general-purpose", "general-purpose")) as app:
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
    # root $0.018, nested $0.036, root $0.054 (67%), nested $0.072 (90%: warned), root $0.09: past the budget
    warnings = [
        line for line in record.output_path.read_text().splitlines() if line.startswith("[turn") and "budget:" in line
    ]
    assert warnings == [
        "[turn 2] budget: spent $0.072 of its $0.08 budget (90%, --max-budget-usd); it stops when the budget is spent"
    ]
    assert record.outcome is not None and record.outcome.failure == "budget"
    text = outcome_text(record, record.outcome, max_chars=None)
    assert "Task stopped at its budget: it spent $0.09 of the $0.08 allowed by --max-budget-usd" in text
