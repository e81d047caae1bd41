from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_subagents.core.errors import DefinitionError
from mcp_subagents.definitions import AgentDefinition, parse_definition, parse_json_agents, tools_summary

ALL_FIELDS = """\
---
name: full-agent
description: Reviews everything
tools: Read, Grep, Bash(git diff *, git log *)
disallowedTools: [Write, "Bash(git push *)"]
model: Opus
permissionMode: acceptEdits
maxTurns: "12"
skills: [writing, review]
mcpServers:
  - github
  - local: {command: node, args: [server.js]}
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: ./check.sh}]
memory: project
background: "true"
effort: high
isolation: worktree
color: purple
initialPrompt: Start by listing files
omitClaudeMd: true
experimental: {fast: true}
criticalSystemReminder_EXPERIMENTAL: Never push.
permission: {"*": deny, Grep: allow}
capabilities: [review]
---

You review code.
"""


def minimal(frontmatter: str, body: str = "Body.") -> str:
    return f"---\n{frontmatter}\n---\n{body}\n"


def parse(text: str, *, path: Path | None = None, plugin: str | None = None) -> AgentDefinition:
    return parse_definition(text, path=path, source="project", plugin=plugin)


def parse_error(text: str, *, path: Path | None = None) -> str:
    with pytest.raises(DefinitionError) as info:
        parse(text, path=path)
    assert info.value.path == path
    return info.value.message


def test_every_contract_field_is_parsed() -> None:
    path = Path("/agents/full-agent.md")
    d = parse_definition(ALL_FIELDS, path=path, source="user")
    assert d == AgentDefinition(
        name="full-agent",
        description="Reviews everything",
        prompt="You review code.",
        tools=("Read", "Grep", "Bash(git diff *, git log *)"),
        disallowed_tools=("Write", "Bash(git push *)"),
        model="opus",
        permission_mode="acceptEdits",
        max_turns=12,
        skills=("writing", "review"),
        mcp_servers=("github", {"local": {"command": "node", "args": ["server.js"]}}),
        hooks={"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]},
        memory="project",
        background=True,
        effort="high",
        isolation="worktree",
        color="purple",
        initial_prompt="Start by listing files",
        omit_claude_md=True,
        critical_reminder="Never push.",
        permission={"*": "deny", "Grep": "allow"},
        source="user",
        path=path,
        plugin=None,
        unknown_fields=("capabilities",),
        extra={"capabilities": ["review"], "experimental": {"fast": True}},
    )


def test_defaults_when_only_name_and_description_are_given() -> None:
    d = parse(minimal("name: small\ndescription: Small one"))
    assert (d.tools, d.disallowed_tools, d.model, d.max_turns, d.permission_mode) == (None, (), "inherit", None, None)
    assert (d.background, d.omit_claude_md, d.skills, d.mcp_servers, d.unknown_fields) == (False, False, (), (), ())


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ("Read, Grep,  Glob ,", ("Read", "Grep", "Glob")),
        ("[Read, Grep]", ("Read", "Grep")),
        ("\n  - Read\n  - Bash(npm test, npm run *)", ("Read", "Bash(npm test, npm run *)")),
        ('"*"', None),
        ("Read, *", None),
        ("[]", ()),
        ('""', ()),
        ("Read, Read", ("Read",)),
        ("mcp__github__*, Task", ("mcp__github__*", "Task")),
        ("Read Grep,Glob\u2003Bash", ("Read", "Grep", "Glob", "Bash")),
        ("Read, Bash(git add *, git commit *) Grep", ("Read", "Bash(git add *, git commit *)", "Grep")),
        ("Read) Grep", ("Read)", "Grep")),
    ],
)
def test_tools_as_string_list_star_or_empty(tools: str, expected: tuple[str, ...] | None) -> None:
    assert parse(minimal(f"name: t\ndescription: d\ntools: {tools}")).tools == expected


def test_disallowed_tools_accept_a_string() -> None:
    d = parse(minimal("name: t\ndescription: d\ndisallowedTools: Write, Edit"))
    assert d.disallowed_tools == ("Write", "Edit")
    assert d.tools is None


@pytest.mark.parametrize("key", ["when-to-use", "when_to_use"])
def test_description_falls_back_to_when_to_use(key: str) -> None:
    assert parse(minimal(f"name: t\n{key}: Use for testing")).description == "Use for testing"


def test_literal_backslash_n_in_a_description_becomes_a_line_break() -> None:
    d = parse(minimal(r"name: t" + "\n" + r"description: First.\n\nExamples: here"))
    assert d.description == "First.\n\nExamples: here"


def test_missing_name_falls_back_to_the_file_stem() -> None:
    assert parse(minimal("description: d"), path=Path("/x/code-helper.md")).name == "code-helper"


def test_missing_name_without_a_path_is_an_error() -> None:
    assert "missing required field 'name'" in parse_error(minimal("description: d"))


def test_plugin_agents_get_prefixed_ids() -> None:
    d = parse(minimal("name: reviewer\ndescription: d"), plugin="tools-kit")
    assert (d.name, d.agent_name, d.plugin) == ("tools-kit:reviewer", "reviewer", "tools-kit")


@pytest.mark.parametrize(
    "name",
    [
        "Explore",
        "general-purpose",
        "my_agent",
        "agent2",
        "Upper_Case",
        "dotnet-framework-4.8-expert",
        "has space",
        "ünïcode-agent",
        "long-name-" + "x" * 60,
    ],
)
def test_names_claude_code_loads_are_taken_as_written(name: str) -> None:
    assert parse(minimal(f"name: {name}\ndescription: d")).name == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("-lead", "must not start with '-'"),
        ("ns:colon", "must not contain ':'"),
        ("ns\uff1acolon", "must not contain ':'"),  # a full-width colon, which NFKC turns into ':'
        ('"tab\\there"', "control characters"),
        ("x" * 257, "at most 256 characters"),
    ],
)
def test_rejected_names(name: str, why: str) -> None:
    message = parse_error(minimal(f"name: {name}\ndescription: d"))
    assert message.startswith("invalid name") and why in message


@pytest.mark.parametrize("frontmatter", ["name: t", "name: t\ndescription: '  '", "name: t\ndescription:"])
def test_missing_or_empty_description_is_an_error(frontmatter: str) -> None:
    assert "missing required field 'description'" in parse_error(minimal(frontmatter))


def test_no_frontmatter_is_an_error_with_the_path() -> None:
    path = Path("/agents/plain.md")
    assert "no YAML frontmatter" in parse_error("# Just markdown\n", path=path)


def test_unclosed_frontmatter_is_an_error() -> None:
    assert "no closing '---'" in parse_error("---\nname: t\ndescription: d\n")


def test_bad_yaml_reports_the_file_line() -> None:
    message = parse_error('---\nname: t\ndescription: d\ntools: "Read\n---\nbody\n')
    assert message.startswith("invalid YAML frontmatter at line")


def test_yaml_claude_code_reads_leniently_loads_the_same_way() -> None:
    """acceptance.json: Claude Code loads this file with the description as written and tools shown as `[Read`."""
    d = parse(minimal("name: bad-yaml\ndescription: Use when: the user asks for x: y\ntools: [Read"))
    assert (d.name, d.description, d.tools) == ("bad-yaml", "Use when: the user asks for x: y", ("[Read",))


def test_tab_indents_and_flow_lists_survive_the_repair() -> None:
    d = parse(minimal("name: t\ndescription: Use: when needed\ntools: [Read, Grep]\nskills:\n\t- a\n\t- b"))
    assert (d.tools, d.skills) == (("Read", "Grep"), ("a", "b"))


def test_frontmatter_must_be_a_mapping() -> None:
    assert "must be a YAML mapping" in parse_error("---\n- a\n- b\n---\n")


def test_bom_crlf_and_leading_blank_lines_are_tolerated() -> None:
    text = "\ufeff\r\n---\r\nname: win\r\ndescription: Windows file\r\n---  \r\n\r\nLine one.\r\nLine two.\r\n"
    d = parse(text)
    assert (d.name, d.description, d.prompt) == ("win", "Windows file", "Line one.\nLine two.")


def test_unquoted_colons_in_one_line_values_are_forgiven() -> None:
    text = minimal(
        'name: t\ndescription: Use when needed. Examples: user: "hi" assistant: "ok" # not a comment\ntools: *'
    )
    d = parse(text)
    assert d.description == 'Use when needed. Examples: user: "hi" assistant: "ok" # not a comment'
    assert d.tools is None


def test_empty_body_is_allowed() -> None:
    assert parse("---\nname: t\ndescription: d\n---\n").prompt == ""


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("model: SONNET", "sonnet"),
        ("model: inherit", "inherit"),
        ("model: claude-opus-5-5", "claude-opus-5-5"),
        ("model: openrouter/Qwen-3", "openrouter/Qwen-3"),
        ("model:", "inherit"),
    ],
)
def test_model_aliases_are_lowercased_and_ids_kept(frontmatter: str, expected: str) -> None:
    assert parse(minimal(f"name: t\ndescription: d\n{frontmatter}")).model == expected


def test_manual_permission_mode_means_default() -> None:
    assert parse(minimal("name: t\ndescription: d\npermissionMode: manual")).permission_mode == "default"


@pytest.mark.parametrize(
    ("field", "needle"),
    [
        ("tools: {Read: yes}", "tools must be a comma-separated string or a list"),
        ("tools: [Read, 3]", "tools must be a comma-separated string or a list"),
        ("disallowedTools: {Write: no}", "disallowedTools must be a comma-separated string or a list"),
        ("hooks: [a]", "hooks must be a mapping"),
        ("permission: deny", "permission must be a mapping"),
    ],
)
def test_a_bad_value_that_would_widen_the_agent_rejects_the_file(field: str, needle: str) -> None:
    assert needle in parse_error(minimal(f"name: t\ndescription: d\n{field}"))


@pytest.mark.parametrize(
    ("field", "attribute", "default", "needle"),
    [
        ("permissionMode: yolo", "permission_mode", None, "invalid permissionMode 'yolo'; allowed: default"),
        ("maxTurns: lots", "max_turns", None, "maxTurns must be a positive integer, got 'lots'"),
        ("maxTurns: 0", "max_turns", None, "maxTurns must be a positive integer"),
        ("maxTurns: true", "max_turns", None, "maxTurns must be a positive integer"),
        ("memory: global", "memory", None, "invalid memory 'global'; allowed: user, project, local"),
        ("background: maybe", "background", False, "background must be true or false"),
        ("omitClaudeMd: 1", "omit_claude_md", False, "omitClaudeMd must be true or false"),
        ("effort: extreme", "effort", None, "invalid effort 'extreme'; allowed: low, medium, high, xhigh, max"),
        ("isolation: container", "isolation", None, "invalid isolation 'container'; allowed: worktree, remote"),
        ("color: [red]", "color", None, "color must be text, not a list"),
        ("color: teal", "color", None, "invalid color 'teal'"),
        ("skills: {a: 1}", "skills", (), "skills must be a comma-separated string or a list"),
        ("mcpServers: 3", "mcp_servers", (), "mcpServers must be a list"),
        ("model: [sonnet]", "model", "inherit", "model must be text, not a list"),
    ],
)
def test_one_bad_optional_value_drops_only_that_field_with_a_warning(
    field: str, attribute: str, default: object, needle: str
) -> None:
    d = parse(
        minimal(
            f"name: t\ndescription: d\nmaxTurns: 7\n{field}"
            if "maxTurns" not in field
            else f"name: t\ndescription: d\n{field}"
        )
    )
    assert getattr(d, attribute) == default
    [warning] = d.warnings
    assert needle in warning and warning.endswith("; the field is ignored")
    if "maxTurns" not in field:
        assert d.max_turns == 7


def test_a_bad_mcp_server_entry_is_dropped_and_the_good_ones_kept() -> None:
    d = parse(minimal("name: t\ndescription: d\nmcpServers: [github, 3, {local: {command: x}}]"))
    assert d.mcp_servers == ("github", {"local": {"command": "x"}})
    assert d.warnings == ("mcpServers entry 3 is neither a server name nor a {name: config} mapping; it is ignored",)


def test_booleans_accept_strings_and_effort_takes_a_level_or_an_integer() -> None:
    d = parse(minimal("name: t\ndescription: d\nbackground: False\nomitClaudeMd: 'TRUE'\neffort: 3\ncolor: Purple"))
    assert (d.background, d.omit_claude_md, d.effort, d.color, d.warnings) == (False, True, "3", "purple", ())
    assert parse(minimal("name: t\ndescription: d\neffort: XHigh")).effort == "xhigh"


def test_mcp_servers_in_mcp_json_shape_become_one_entry_per_server() -> None:
    d = parse(minimal("name: t\ndescription: d\nmcpServers: {a: {command: x}, b: {type: http, url: u}}"))
    assert d.mcp_servers == ({"a": {"command": "x"}}, {"b": {"type": "http", "url": "u"}})


def test_a_single_server_name_and_comma_separated_skills() -> None:
    d = parse(minimal("name: t\ndescription: d\nmcpServers: github\nskills: a, b"))
    assert (d.mcp_servers, d.skills) == (("github",), ("a", "b"))


def test_json_agents_parse_like_frontmatter() -> None:
    data = json.dumps(
        {"reviewer": {"description": "Reviews", "prompt": " You review. ", "tools": ["Read", "Grep"], "maxTurns": 3}}
    )
    definitions, errors = parse_json_agents(data, source="flag")
    assert errors == []
    [d] = definitions
    assert (d.name, d.prompt, d.tools, d.max_turns, d.source, d.path) == (
        "reviewer",
        "You review.",
        ("Read", "Grep"),
        3,
        "flag",
        None,
    )


def test_broken_json_agents_are_reported_and_good_entries_still_load() -> None:
    data = {"good": {"description": "d", "prompt": "p"}, "bad": {"prompt": "p"}, "worse": "text", "bad:name": {}}
    definitions, errors = parse_json_agents(data, source="policy", origin="/etc/policy.json")
    assert [d.name for d in definitions] == ["good"]
    assert [(e.path, e.error.split(":")[0]) for e in errors] == [
        ("/etc/policy.json", "agent 'bad'"),
        ("/etc/policy.json", "agent 'worse'"),
        ("/etc/policy.json", "agent 'bad"),
    ]


@pytest.mark.parametrize(("data", "needle"), [("{nope", "invalid JSON"), ("[1]", "must be an object")])
def test_unparseable_json_agents_give_one_error(data: str, needle: str) -> None:
    definitions, errors = parse_json_agents(data, source="flag")
    assert definitions == []
    assert len(errors) == 1
    assert errors[0].path == "--agents"
    assert needle in errors[0].error


@pytest.mark.parametrize(
    ("tools", "disallowed", "summary"),
    [
        (None, (), "All tools"),
        (None, ("Write", "Edit"), "All tools except Write, Edit"),
        (("Read", "Grep", "Bash(git *)"), (), "Read, Grep, Bash(git *)"),
        (("Read", "Bash(git *)"), ("Bash(git push *)",), "Read"),
        ((), (), "None"),
    ],
)
def test_tools_summary(tools: tuple[str, ...] | None, disallowed: tuple[str, ...], summary: str) -> None:
    d = AgentDefinition(name="a", description="d", prompt="", tools=tools, disallowed_tools=disallowed, source="flag")
    assert tools_summary(d) == summary
