"""How a Task call is resolved into a run: provider, model id, tools and system prompt."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mcp_subagents.agent.prompts import system_prompt
from mcp_subagents.core.errors import ConfigError
from mcp_subagents.definitions import AgentDefinition
from mcp_subagents.models.providers import provider_config
from mcp_subagents.models.resolve import resolve_model_id
from mcp_subagents.runtime.toolsets import select_tools
from mcp_subagents.tools import builtin_tools


def definition(**fields: object) -> AgentDefinition:
    return replace(AgentDefinition(name="a", description="d", prompt="p", source="project"), **fields)


def test_provider_is_chosen_by_flag_then_by_which_variables_are_set() -> None:
    both = {"ANTHROPIC_API_KEY": "sk-very-secret", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    by_variables, by_flag = provider_config(None, both), provider_config("openai", both)
    assert by_variables is not None and by_variables.name == "anthropic"
    assert by_flag is not None and by_flag.name == "openai"
    local = provider_config(None, {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert local is not None and local.name == "openai" and local.api_key == "not-needed"
    by_token = provider_config(None, {"ANTHROPIC_AUTH_TOKEN": "t"})
    assert by_token is not None and by_token.api_key == "t"
    assert provider_config(None, {}) is None
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        provider_config("anthropic", {})
    assert "sk-very-secret" not in repr(provider_config(None, both))


@pytest.mark.parametrize(
    ("task", "defined", "default", "provider", "expected"),
    [
        (None, None, "sonnet", "anthropic", "claude-sonnet-5-5"),
        (None, "inherit", "opus", "anthropic", "claude-opus-5-5"),
        (None, "haiku", "sonnet", "anthropic", "claude-haiku-5-5"),
        ("fable", "haiku", "sonnet", "anthropic", "claude-fable-5-2"),
        (None, "claude-opus-4-8", "sonnet", "anthropic", "claude-opus-4-8"),
        (None, "haiku", "llama3.3", "openai", "llama3.3"),
        (None, "qwen3:8b", "llama3.3", "openai", "qwen3:8b"),
        ("opus", None, "llama3.3", "openai", "llama3.3"),
    ],
)
def test_model_resolution(task: str | None, defined: str | None, default: str, provider: str, expected: str) -> None:
    assert (
        resolve_model_id(task_model=task, definition_model=defined, default_model=default, provider=provider)
        == expected
    )


def test_disallowed_tools_apply_first_then_tools() -> None:
    available = builtin_tools()
    everything = select_tools(definition(), available)
    assert list(everything.tools) == list(available) and everything.missing == []
    read_only = select_tools(definition(disallowed_tools=("Write", "Edit", "Bash(git push *)")), available).tools
    assert "Write" not in read_only and "Edit" not in read_only and "Bash" not in read_only and "Read" in read_only
    chosen = select_tools(
        definition(
            tools=("Read", "Bash(git status)", "Task", "Agent(x)", "WebSearch", "Grep"), disallowed_tools=("Grep",)
        ),
        available,
    )
    assert list(chosen.tools) == ["Read", "Bash"]
    # No Agent tool in this run (it is at the depth limit): Task and Agent(x) are not unknown tools.
    assert [item.entry for item in chosen.missing] == ["WebSearch"]


def test_task_entries_and_mcp_wildcards_select_the_runs_extension_tools() -> None:
    available = {**builtin_tools(), **{name: builtin_tools()["Read"] for name in ("Agent", "mcp__gh__a", "mcp__gh__b")}}
    by_agent = select_tools(definition(tools=("Agent(reviewer)",)), available).tools
    by_wildcard = select_tools(definition(tools=("mcp__gh__*",), disallowed_tools=("mcp__gh__b",)), available).tools
    by_server = select_tools(definition(tools=("mcp__gh",)), available).tools
    without = select_tools(definition(tools=("Read", "mcp__other__*"), disallowed_tools=("Task",)), available)
    assert list(by_agent) == ["Agent"]
    assert list(by_wildcard) == ["mcp__gh__a"] and list(by_server) == ["mcp__gh__a", "mcp__gh__b"]
    assert list(without.tools) == ["Read"] and [item.entry for item in without.missing] == ["mcp__other__*"]
    assert "does not list" in without.missing[0].reason  # the agent's mcpServers names no server 'other'


def test_system_prompt_has_body_environment_and_reminder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    prompt = system_prompt(
        "You review code.", cwd=tmp_path, critical_reminder="Never push.", today=dt.date(2026, 11, 22)
    )
    assert prompt.startswith("You review code.")
    assert f"Working directory: {tmp_path}" in prompt
    assert "Is directory a git repo: Yes" in prompt and "Today's date: 2026-11-22" in prompt
    assert prompt.rstrip().endswith("<critical_reminder>\nNever push.\n</critical_reminder>")


def test_starting_the_server_does_not_import_provider_sdks(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from mcp_subagents.cli.arguments import ALL_OPTIONS\n"
        "from mcp_subagents.mcp.server import build_server\n"
        "from mcp_subagents.runtime.service import Subagents\n"
        "from pathlib import Path\n"
        "from mcp_subagents.config.settings import Settings\n"
        f"settings = Settings(cwd=None, state_dir=Path({str(tmp_path)!r}))\n"
        "app = Subagents(settings, environ={'ANTHROPIC_API_KEY': 'k'})\n"
        "build_server(app)\n"
        "app.catalog()\n"
        "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


TASK_ENGINE = (
    "mcp_subagents.tasks.manager",
    "mcp_subagents.agent.loop",
    "mcp_subagents.core.messages",
    "mcp_subagents.tasks.transcripts",
    "mcp_subagents.tasks.record",
    "mcp_subagents.tasks.outcome",
    "mcp_subagents.mcp.foreground",
    "mcp_subagents.render.envelopes",
    "mcp_subagents.render.status",
    "mcp_subagents.tools.base",
    "mcp_subagents.models.base",
)


def test_the_server_starts_and_lists_its_tools_without_the_task_engine(tmp_path: Path) -> None:
    """The task engine's modules were a third of the server's own import time: they load after the first listing
    (the warm-up) or at the first call, not on the way to it; a task still runs, and then they are loaded."""
    probe = f"""
import sys, anyio
from pathlib import Path
from mcp_subagents import cli
from mcp_subagents.mcp.notifications import watch_catalog
from mcp_subagents.core.processes import harden_server_process, kill_descendants
from mcp_subagents.mcp.server import _tools, build_server
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.config.settings import Settings
from mcp_subagents.serve.transports import open_listener, serve

ENGINE = {TASK_ENGINE!r}

async def main():
    settings = Settings(cwd=Path({str(tmp_path)!r}), state_dir=Path({str(tmp_path / "state")!r}))
    app = Subagents(settings, environ={{"ANTHROPIC_API_KEY": "k"}})
    async with app.running():
        build_server(app)
        names = [tool.name for tool in _tools(app, app.catalog())]
        print(names, sorted(m for m in ENGINE if m in sys.modules))
    from mcp_subagents.models.scripted import ScriptedModel, text

    app = Subagents(settings, model=ScriptedModel([text("done")]))
    async with app.running():
        args = TaskRequest(description="d", prompt="p", subagent_type="general-purpose")
        record = app.launch(args)
        await app.tasks.wait(record, 30)
        print(record.state, sorted(m for m in ENGINE if m not in sys.modules))  # the Task tool's calls: not used

anyio.run(main)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == [
        "['Task', 'TaskOutput', 'TaskStop'] []",
        "completed ['mcp_subagents.mcp.foreground']",
    ]
