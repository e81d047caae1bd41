"""Agents with `model: inherit` or no model run on the person's main model where it can be known, as Claude Code
2.1.328 runs them on its session's model (`reference/claude-code-2.1.328/inherit_main_sonnet.cc.json`): `--main-model`,
else `ANTHROPIC_MODEL`, else the `model` of Claude Code's settings, else `--model`. Every result says which model
ran, at which effort, and warns when the agent file's model was overridden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.support import connected, make_settings, provider_environment, text_of, write_agent

pytestmark = pytest.mark.anyio

SECRET = "sk-test-secret-0123456789"
TASK = {"description": "look", "prompt": "Look around."}


async def _models_sent(fake: FakeLLM, settings: Any, *tasks: dict[str, Any]) -> tuple[list[str], list[str]]:
    fake.push(*[turn(text("done")) for _ in tasks])
    async with connected(settings, environ=provider_environment(fake, SECRET)) as client:
        results = [text_of(await client.call_tool("Task", task)) for task in tasks]
    return [request["body"]["model"] for request in fake.requests], results


async def test_claude_codes_settings_model_is_the_main_model(tmp_path: Path, fake: FakeLLM) -> None:
    settings = make_settings(tmp_path)
    assert settings.user_settings_file is not None
    settings.user_settings_file.parent.mkdir(parents=True)
    settings.user_settings_file.write_text(json.dumps({"model": "opus"}), encoding="utf-8")
    models, [result] = await _models_sent(fake, settings, TASK)
    assert models == ["claude-opus-5-5"]  # general-purpose says `model: inherit`
    assert "; model: claude-opus-5-5; effort: medium; turns: 1;" in result
    assert "Warning" not in result


async def test_anthropic_model_wins_over_the_settings_and_main_model_over_both(tmp_path: Path, fake: FakeLLM) -> None:
    settings = make_settings(tmp_path, anthropic_model="haiku")
    assert settings.user_settings_file is not None
    settings.user_settings_file.parent.mkdir(parents=True)
    settings.user_settings_file.write_text(json.dumps({"model": "opus"}), encoding="utf-8")
    first, _ = await _models_sent(fake, settings, TASK)
    fake.reset()
    second, _ = await _models_sent(fake, make_settings(tmp_path, anthropic_model="haiku", main_model="fable"), TASK)
    assert (first, second) == (["claude-haiku-5-5"], ["claude-fable-5-2"])


async def test_without_a_main_model_inherit_runs_on_model(tmp_path: Path, fake: FakeLLM) -> None:
    models, _ = await _models_sent(fake, make_settings(tmp_path, model="haiku"), TASK)
    assert models == ["claude-haiku-5-5"]


async def test_a_file_model_overridden_by_the_task_call_is_a_warning_in_the_result(
    tmp_path: Path, fake: FakeLLM
) -> None:
    settings = make_settings(tmp_path, main_model="opus")
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "quick", extra="model: haiku\neffort: low\n")
    models, [kept, overridden] = await _models_sent(
        fake,
        settings,
        {**TASK, "subagent_type": "quick"},
        {**TASK, "subagent_type": "quick", "model": "sonnet"},
    )
    assert models == ["claude-haiku-5-5", "claude-sonnet-5-5"]  # the main model is only for inherit / none
    assert "Warning" not in kept and "; model: claude-haiku-5-5; effort: low;" in kept
    assert (
        "[Warning: The agent file asks for model 'haiku'; the task ran on claude-sonnet-5-5, chosen by the Task "
        "call's model argument.]"
    ) in overridden


async def test_task_output_names_the_model_and_effort(tmp_path: Path, fake: FakeLLM) -> None:
    fake.push(turn(text("done")))
    settings = make_settings(tmp_path, main_model="opus")
    async with connected(settings, environ=provider_environment(fake, SECRET)) as client:
        launched = text_of(await client.call_tool("Task", {**TASK, "run_in_background": True}))
        task_id = launched.split("task_id: ")[1].split()[0]
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert '<model effort="medium">claude-opus-5-5</model>' in status
    assert "; model: claude-opus-5-5; effort: medium;" in status
