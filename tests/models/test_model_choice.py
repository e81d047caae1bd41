"""Which model a task runs on, and why: the Task call's `model`, the agent file's, the person's main model for
`model: inherit` or none (as Claude Code 2.1.328 runs such agents on the session's model), else `--model`; and the
warning a result carries when the file's model was not the one that ran."""

from __future__ import annotations

import pytest

from mcp_subagents.models.resolve import MainModel, choose_model, main_model

OPUS_MAIN = MainModel("opus", "ANTHROPIC_MODEL")


@pytest.mark.parametrize(
    ("task", "defined", "main", "expected", "by"),
    [
        (None, None, OPUS_MAIN, "claude-opus-5-5", "the main model (ANTHROPIC_MODEL)"),
        (None, "inherit", OPUS_MAIN, "claude-opus-5-5", "the main model (ANTHROPIC_MODEL)"),
        (None, "inherit", None, "claude-sonnet-5-5", "--model (the main model is not known)"),
        (None, "haiku", OPUS_MAIN, "claude-haiku-5-5", "the agent file"),
        ("fable", None, OPUS_MAIN, "claude-fable-5-2", "the Task call's model argument"),
    ],
)
def test_the_model_and_what_chose_it(
    task: str | None, defined: str | None, main: MainModel | None, expected: str, by: str
) -> None:
    choice = choose_model(
        task_model=task, definition_model=defined, main=main, default_model="sonnet", provider="anthropic"
    )
    assert (choice.model_id, choice.chosen_by, choice.override) == (expected, by, "")


def test_a_file_model_the_task_call_overrides_is_a_warning_naming_it() -> None:
    choice = choose_model(
        task_model="opus", definition_model="haiku", main=None, default_model="sonnet", provider="anthropic"
    )
    assert choice.model_id == "claude-opus-5-5"
    assert choice.override == (
        "The agent file asks for model 'haiku'; the task ran on claude-opus-5-5, chosen by the Task call's model "
        "argument."
    )


def test_the_same_model_by_another_name_is_no_override() -> None:
    choice = choose_model(
        task_model="haiku", definition_model="claude-haiku-5-5", main=None, default_model="sonnet", provider="anthropic"
    )
    assert choice.override == ""


def test_an_alias_an_openai_endpoint_does_not_serve_runs_on_model_and_says_so() -> None:
    choice = choose_model(
        task_model=None, definition_model="haiku", main=None, default_model="qwen3:8b", provider="openai"
    )
    assert choice.model_id == "qwen3:8b"
    assert "asks for model 'haiku'" in choice.override
    assert "--model, since the OpenAI-compatible endpoint does not serve the Claude alias 'haiku'" in choice.override


def test_an_in_process_model_that_ignores_aliases_draws_no_warning() -> None:
    choice = choose_model(
        task_model=None, definition_model="haiku", main=None, default_model="sonnet", provider="scripted"
    )
    assert (choice.chosen_by, choice.override) == ("the agent file", "")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("opus", "opus"),
        (" claude-opus-5-5[1m] ", "claude-opus-5-5"),
        ("sonnet[1m]", "sonnet"),
        ("default", None),
        ("", None),
    ],
)
def test_main_model_values_as_claude_code_writes_them(given: str, expected: str | None) -> None:
    found = main_model(given, "somewhere")
    assert (found.name if found else None) == expected
