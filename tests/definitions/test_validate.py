from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.cli.validate import WEB_SEARCH_LEFT_OUT, WEB_SEARCH_NOTE, Problem, report_lines, validate_paths
from mcp_subagents.definitions import AgentDefinition, missing_tools

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
    assert check(tmp_path, "name: clean\ndescription: d\ntools: Read, Bash(git *), Skill\nmodel: haiku") == []


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
        ("warning", "name 'My_Agent' should use letters, digits and hyphens only"),
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


def test_missing_tools_names_each_entry_that_gives_no_tool_and_why() -> None:
    definition = AgentDefinition(
        name="a",
        description="d",
        prompt="p",
        tools=("Read", "Bash(ls *)", "WebSearch", "mcp__x__y", "Task", "Agent(b)", "Mystery", "grep", "LS"),
        mcp_servers=("x",),
        source="user",
    )
    # Task/Agent are the nested Task tool (absent only at the depth limit), and the tools of an MCP server the agent's
    # mcpServers names are known only once it starts: none of them is missing before the run.
    assert [(m.entry, m.reason) for m in missing_tools(definition, {*KNOWN, "WebSearch"})] == [
        ("Mystery", "no tool has that name here"),
        ("grep", "tool names are case-sensitive: did you mean 'Grep'?"),
        ("LS", "it exists only in Claude Code"),
    ]
    # Once the servers have started, an entry no server offers is missing, and says where to look.
    started = [(m.entry, m.reason) for m in missing_tools(definition, {*KNOWN, "WebSearch"}, mcp_tools_known=True)]
    assert started[0] == (
        "mcp__x__y",
        "the agent's MCP server 'x' does not offer it (or did not start: see the result's notes)",
    )
    assert missing_tools(AgentDefinition(name="a", description="d", prompt="p", source="user"), KNOWN) == []


def test_wrong_case_tool_names_are_named_with_the_right_spelling(tmp_path: Path) -> None:
    assert check(tmp_path, "name: a\ndescription: d\ntools: Read, grep") == [
        ("warning", "unknown tool 'grep' (tool names are case-sensitive: did you mean 'Grep'?); it is left out"),
    ]


def test_an_agent_left_with_no_tool_is_an_error_naming_every_entry(tmp_path: Path) -> None:
    found = check(tmp_path, "name: a\ndescription: d\ntools: read, grep, bash")
    assert found[:3] == [
        ("warning", f"unknown tool {name!r} (tool names are case-sensitive: did you mean {right!r}?); it is left out")
        for name, right in (("read", "Read"), ("grep", "Grep"), ("bash", "Bash"))
    ]
    assert found[3] == (
        "error",
        "none of the tools its `tools` line lists exists here, so it would run with no tools at all ('read': tool "
        "names are case-sensitive: did you mean 'Read'?; 'grep': tool names are case-sensitive: did you mean "
        "'Grep'?; 'bash': tool names are case-sensitive: did you mean 'Bash'?); Task refuses to start this agent",
    )
    assert len(found) == 4


@pytest.mark.parametrize(
    "fields",
    [
        "tools: []",  # no tools, on purpose: Claude Code runs it too
        'tools: ""',
        "tools: Read\ndisallowedTools: Read",
        "tools: reed\nmemory: project",  # its memory still gives it Read, Write and Edit
    ],
)
def test_an_agent_without_tools_on_purpose_is_no_error(tmp_path: Path, fields: str) -> None:
    assert [severity for severity, _ in check(tmp_path, f"name: a\ndescription: d\n{fields}")] in ([], ["warning"])


def test_mcp_tools_name_the_server_that_must_provide_them(tmp_path: Path) -> None:
    found = check(tmp_path, "name: a\ndescription: d\ntools: Read, mcp__github__create_issue, mcp__jira__search")
    needs = (
        "which the agent's mcpServers does not list (in Claude Code the session's own servers could provide it; here "
        "an agent gets only the servers its file names)"
    )
    assert found == [
        ("warning", f"tool 'mcp__github__create_issue' is left out: it needs an MCP server named 'github', {needs}"),
        ("warning", f"tool 'mcp__jira__search' is left out: it needs an MCP server named 'jira', {needs}"),
    ]
    listed = check(tmp_path, "name: a\ndescription: d\ntools: Read, mcp__github__create_issue\nmcpServers: [github]")
    assert (
        "warning",
        "tool 'mcp__github__create_issue' must be offered by the agent's MCP server 'github' when it starts",
    ) in listed


@pytest.mark.parametrize(
    ("provider", "expected"),
    [("anthropic", []), ("openai", [WEB_SEARCH_LEFT_OUT]), (None, [WEB_SEARCH_NOTE])],
)
def test_what_websearch_comes_to_depends_on_the_provider(
    tmp_path: Path, provider: str | None, expected: list[str]
) -> None:
    path = write_agent(tmp_path, "searcher.md", "name: searcher\ndescription: d\ntools: Read, WebSearch")
    assert [p.message for p in validate_paths([path], KNOWN, provider=provider)] == expected


def test_a_warning_many_files_share_is_one_line_naming_them(tmp_path: Path) -> None:
    for index in range(10):
        write_agent(tmp_path, f"searcher-{index}.md", f"name: searcher-{index}\ndescription: d\ntools: WebSearch, Read")
    broken = write_agent(tmp_path, "broken.md", "name: broken")
    lonely = write_agent(tmp_path, "lonely.md", "name: lonely\ndescription: d\ncolor: blue")
    lines = report_lines(validate_paths([tmp_path], KNOWN, provider="openai"))
    names = ", ".join(f"searcher-{index}.md" for index in range(8))
    assert lines == [
        f"{broken}: missing required field 'description' (when to delegate to this agent)",
        f"{lonely}: warning: color is only shown in Claude Code's interface; it has no effect here",
        f"warning: {WEB_SEARCH_LEFT_OUT} (10 files: {names} and 2 more)",
    ]
