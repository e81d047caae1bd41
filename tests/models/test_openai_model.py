"""An OpenAI-compatible endpoint needs a model it serves: without `--model` a Task is refused with the hint instead of
asking the endpoint for `sonnet`, and an endpoint's "model not found" answer carries the same hint."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_subagents.cli import main
from tests.fakes.fake_llm import FakeLLM, error, text, turn
from tests.support import connected, make_settings, provider_environment, running_app, text_of, write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "look", "prompt": "Look around.", "subagent_type": "general-purpose"}
HINT = "Set --model / MCP_SUBAGENTS_MODEL to a model your endpoint serves"


async def test_without_a_model_a_task_is_refused_with_the_hint(tmp_path: Path, fake: FakeLLM) -> None:
    async with connected(make_settings(tmp_path), environ={"OPENAI_BASE_URL": f"{fake.url}/v1"}) as client:
        result = await client.call_tool("Task", TASK)
    assert result.is_error
    assert text_of(result) == (
        '<task_error agent="general-purpose">No model is set for the OpenAI-compatible endpoint, so it would be '
        f"asked for 'sonnet', a Claude alias it does not serve. {HINT} (for example --model qwen3:8b), or name one "
        "in the agent file's `model` field.</task_error>"
    )
    assert fake.requests == []


async def test_an_agent_file_naming_a_model_runs_without_one(tmp_path: Path, fake: FakeLLM) -> None:
    write_agent(tmp_path / "work" / ".claude" / "agents", "local", extra="model: qwen3:8b\n")
    fake.push(turn(text("hello from qwen")))
    async with connected(make_settings(tmp_path), environ={"OPENAI_BASE_URL": f"{fake.url}/v1"}) as client:
        result = await client.call_tool("Task", {**TASK, "subagent_type": "local"})
    assert not result.is_error, text_of(result)
    assert "hello from qwen" in text_of(result)
    assert fake.requests[0]["body"]["model"] == "qwen3:8b"


async def test_the_start_up_log_says_what_to_set(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_subagents"):
        async with running_app(make_settings(tmp_path), environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}):
            pass
    assert any(HINT in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (404, 'model "llama3" not found, try pulling it first'),  # Ollama
        (404, "The model `llama3` does not exist."),  # vLLM, OpenAI
        (400, "llama3 is not a valid model ID"),  # OpenRouter
    ],
)
async def test_a_model_not_found_answer_carries_the_hint(
    tmp_path: Path, fake: FakeLLM, status: int, message: str
) -> None:
    fake.push(error(status, type="invalid_request_error", message=message))
    settings = make_settings(tmp_path, model="llama3")
    async with connected(settings, environ={"OPENAI_BASE_URL": f"{fake.url}/v1"}) as client:
        result = await client.call_tool("Task", TASK)
    assert result.is_error
    assert f"OpenAI API does not serve the model asked for ({status}" in text_of(result)
    assert message in text_of(result) and f"{HINT}.</task_error>" in text_of(result)


async def test_anthropic_model_not_found_carries_the_hint_and_other_404s_do_not(tmp_path: Path, fake: FakeLLM) -> None:
    fake.push(error(404, message="model: claude-nonesuch-1"), error(404, message="Not found"))
    environ = provider_environment(fake)
    async with connected(make_settings(tmp_path, model="claude-nonesuch-1"), environ=environ) as client:
        unknown_model = text_of(await client.call_tool("Task", TASK))
        other = text_of(await client.call_tool("Task", TASK))
    assert "Anthropic API does not serve the model asked for (404 not_found_error: model: claude-nonesuch-1)" in (
        unknown_model
    )
    assert HINT in unknown_model
    assert "Anthropic API rejected the request (404 not_found_error: Not found)" in other and HINT not in other


def test_run_from_the_shell_refuses_with_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "MCP_SUBAGENTS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["run", "general-purpose", "hi", "--cwd", str(tmp_path), "--state-dir", str(tmp_path / "state")])
    assert exited.value.code == 1
    assert HINT in capsys.readouterr().err  # `run` speaks to a person on stderr (--raw prints the task_error)
