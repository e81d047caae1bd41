from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.definitions import AgentDefinition, Problem, unknown_tools, validate_paths

KNOWN = frozenset({"Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite"})


def write_agent(folder: Path, filename: str, frontmatter: str, body: str = "You help.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_text(f"---\n{frontmatter}\n---\n{body}\n", encoding="utf-8")
    return path


def messages(path: Path) -> list[tuple[str, str]]:
    return [(p.severity, p.message) for p in validate_paths([path], KNOWN)]


def check(tmp_path: Path, frontmatter: str, body: str = "You help.") -> list[tuple[str, str]]:
    return messages(write_agent(tmp_path, "agent.md", frontmatter, body))


def test_a_clean_file_has_no_problems(tmp_path: Path) -> None:
    assert check(tmp_path, "name: clean\ndescription: d\ntools: Read, Bash(git *), mcp__gh__*\nmodel: haiku") == []


def test_a_parse_error_is_one_error(tmp_path: Path) -> None:
    path = write_agent(tmp_path, "x.md", "name: x")
    assert validate_paths([path], KNOWN) == [
        Problem(str(path), "missing required field 'description' (when to delegate to this agent)", "error")
    ]


def test_unknown_fields_are_named_with_a_hint_when_one_fits(tmp_path: Path) -> None:
    assert check(tmp_path, "name: a\ndescription: d\nallowedTools: Read\ncapabilities: [x]") == [
        ("warning", "unknown field 'allowedTools' is ignored; did you mean 'tools'?"),
        ("warning", "unknown field 'capabilities' is ignored"),
    ]


def test_tools_that_cannot_be_granted_here_are_reported_as_warnings(tmp_path: Path) -> None:
    found = check(tmp_path, "name: a\ndescription: d\ntools: Read, Task, WebSearch, TeamCreate, Frobnicate, Agent(x)")
    assert found == [  # Task and Agent(x) launch nested subagents: nothing to say about them
        (
            "warning",
            "tool 'WebSearch' uses the Anthropic API's server-side web search: it is offered only with the "
            "Anthropic provider and left out with an OpenAI-compatible one",
        ),
        ("warning", "tool 'TeamCreate' exists only in Claude Code and is unavailable here; it is left out"),
        ("warning", "unknown tool 'Frobnicate'; it is left out"),
    ]


def test_a_disallowed_tool_typo_is_flagged_but_claude_code_tools_are_not(tmp_path: Path) -> None:
    assert check(tmp_path, "name: a\ndescription: d\ndisallowedTools: Wrte, NotebookEdit, Bash(git push *)") == [
        ("warning", "disallowedTools names unknown tool 'Wrte'; if it is a typo, the tool stays allowed"),
    ]


@pytest.mark.parametrize(
    "model", ["sonnet", "OPUS", "inherit", "claude-opus-5-5", "gpt-5.1", "openrouter/qwen", "llama3:8b", "o3.mini"]
)
def test_plausible_models_pass(tmp_path: Path, model: str) -> None:
    assert check(tmp_path, f"name: a\ndescription: d\nmodel: {model}") == []


@pytest.mark.parametrize("model", ["sonet", "gpt4"])
def test_a_bad_model_is_an_error(tmp_path: Path, model: str) -> None:
    assert check(tmp_path, f"name: a\ndescription: d\nmodel: {model}") == [
        ("error", f"model {model!r} is not an alias (sonnet, opus, haiku, fable), inherit or a model id"),
    ]


def test_name_problems_are_warnings(tmp_path: Path) -> None:
    assert messages(write_agent(tmp_path, "from-stem.md", "description: d")) == [
        ("warning", "no 'name' field; the file name 'from-stem' is used"),
    ]
    assert messages(write_agent(tmp_path, "mixed.md", "name: My_Agent\ndescription: d")) == [
        ("warning", "name 'My_Agent' should use lowercase letters, digits and hyphens only"),
    ]


def test_description_fallback_and_empty_body_are_warnings(tmp_path: Path) -> None:
    assert check(tmp_path, "name: a\nwhen-to-use: sometimes", body="") == [
        ("warning", "description taken from 'when-to-use'; Claude Code's field is 'description'"),
        ("warning", "empty body: the agent has no system prompt"),
    ]


def test_yaml_that_only_loads_after_quoting_is_a_warning(tmp_path: Path) -> None:
    [(severity, message)] = check(tmp_path, "name: a\ndescription: Use it. Examples: user: hi")
    assert severity == "warning"
    assert message.startswith("invalid YAML frontmatter at line 3, column")
    assert message.endswith("loaded anyway by quoting the value. Quote it: strict parsers reject it")


def test_bad_optional_values_are_warnings_naming_what_is_dropped(tmp_path: Path) -> None:
    assert check(tmp_path, "name: a\ndescription: d\neffort: extreme\nmaxTurns: lots") == [
        ("warning", "maxTurns must be a positive integer, got 'lots'; the field is ignored"),
        (
            "warning",
            "invalid effort 'extreme'; allowed: low, medium, high, xhigh, max or an integer; the field is ignored",
        ),
    ]


def test_fields_without_effect_here_are_named(tmp_path: Path) -> None:
    frontmatter = (
        "name: a\ndescription: d\ncolor: blue\ninitialPrompt: go\nisolation: worktree\n"
        "hooks: {Stop: []}\nmcpServers: [github]\neffort: 7"
    )
    messages = [message for _, message in check(tmp_path, frontmatter)]
    assert messages == [  # hooks, mcpServers and isolation: worktree work here now
        "effort 7 is a number, which Claude Code keeps for its own use; providers take only the levels low, medium, "
        "high, xhigh, max, so the default 'medium' is sent",
        "initialPrompt only applies when Claude Code runs an agent as its main session; ignored here",
        "color is only shown in Claude Code's interface; it has no effect here",
    ]


def test_hooks_and_servers_that_cannot_run_are_named(tmp_path: Path) -> None:
    frontmatter = (
        "name: a\ndescription: d\nisolation: remote\n"
        'hooks: {"Stop": [{"hooks": [{"type": "command", "command": "./done.sh"}]}], '
        '"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "ok?"}]}], '
        '"SessionStart": [{"hooks": [{"type": "command", "command": "./x.sh"}]}]}\n'
        'mcpServers: [github, {"db": {"args": ["x"]}}, {"me": {"command": "mcp-subagents", "args": ["serve"]}}]'
    )
    assert [message for _, message in check(tmp_path, frontmatter)] == [
        "hooks.PreToolUse[0].hooks[0]: 'prompt' hooks are not supported by this server yet (only 'command'); skipped",
        "hooks.SessionStart never fires for a subagent; it is ignored",
        "mcpServers.db: a stdio server needs 'command'",
        "mcpServers.me: it runs mcp-subagents itself, which would start this server inside itself; not started",
        "isolation: remote is not supported here: the agent runs in the working directory",
    ]


def test_a_project_files_hooks_and_servers_are_named_until_the_project_is_trusted(tmp_path: Path) -> None:
    path = write_agent(tmp_path / "repo" / ".claude" / "agents", "x.md", "name: x\ndescription: d\nmcpServers: [gh]")
    elsewhere = write_agent(tmp_path / "mine", "y.md", "name: y\ndescription: d\nmcpServers: [gh]")

    def untrusted(file: Path) -> str | None:
        return "the project is not trusted" if ".claude" in file.parts else None

    found = [(p.path, p.message) for p in validate_paths([path, elsewhere], KNOWN, untrusted=untrusted)]
    assert found == [
        (str(path), "its hooks and MCP servers are skipped until the project is trusted: the project is not trusted")
    ]


def test_features_that_work_here_validate_clean(tmp_path: Path) -> None:
    frontmatter = "name: a\ndescription: d\nskills: [x]\nmemory: project\neffort: high\nomitClaudeMd: true"
    assert check(tmp_path, frontmatter) == []


def test_folders_are_searched_and_duplicate_names_reported(tmp_path: Path) -> None:
    first = write_agent(tmp_path / "a", "one.md", "name: same\ndescription: d")
    second = write_agent(tmp_path / "b" / "deep", "two.md", "name: same\ndescription: d")
    (tmp_path / "README.md").write_text("# About these agents\n", encoding="utf-8")
    (tmp_path / "bad.md").write_bytes(b"---\nname: \xff\n---\n")
    assert validate_paths([tmp_path], KNOWN) == [
        Problem(str(second), f"name 'same' is also defined in {first}; the later one wins", "warning"),
        Problem(str(tmp_path / "bad.md"), "not UTF-8 text (invalid byte at offset 10)", "error"),
    ]


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    assert validate_paths([tmp_path / "nope.md"], KNOWN) == [
        Problem(str(tmp_path / "nope.md"), "no such file or folder")
    ]


def test_unknown_tools_lists_what_the_server_cannot_provide() -> None:
    definition = AgentDefinition(
        name="a",
        description="d",
        prompt="p",
        tools=("Read", "Bash(ls *)", "WebSearch", "mcp__x__y", "Task", "Agent(b)", "Mystery"),
        source="user",
    )
    assert unknown_tools(definition, KNOWN) == ["Mystery"]
    assert unknown_tools(AgentDefinition(name="a", description="d", prompt="p", source="user"), KNOWN) == []
