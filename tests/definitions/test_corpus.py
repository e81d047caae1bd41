"""Real agent files people use with Claude Code (the wshobson/agents plugin marketplace) must load unchanged."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from mcp_subagents.cli.validate import validate_paths
from mcp_subagents.definitions import Catalog, CatalogLoader, DefinitionSources, missing_tools
from tests.support import SHARED, require_shared

CORPUS = SHARED / "corpus"
PLUGINS = CORPUS / "wshobson-agents" / "plugins"
KNOWN_TOOLS = frozenset({"Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite"})
AGENT_FILES = 202


@pytest.fixture(scope="module", autouse=True)
def corpus_present() -> None:
    require_shared(PLUGINS, "agent corpus")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return CatalogLoader(DefinitionSources(plugin_dirs=(PLUGINS,))).load()


def corpus_files() -> list[Path]:
    return sorted(path for path in CORPUS.rglob("*.md") if path.parent.name == "agents")


def test_every_agent_file_loads_without_error(catalog: Catalog) -> None:
    assert catalog.errors == ()
    assert len(corpus_files()) == AGENT_FILES
    assert len(catalog.agents) == AGENT_FILES
    assert sorted(d.path for d in catalog.agents.values() if d.path) == corpus_files()


def test_ids_are_plugin_qualified(catalog: Catalog) -> None:
    for definition in catalog.agents.values():
        assert definition.path is not None
        assert definition.plugin == definition.path.parents[1].name
        assert definition.name == f"{definition.plugin}:{definition.agent_name}"
    assert "pptx-deck-creation:pptx-deck-creation-builder" in catalog.agents  # listed via plugin.json "agents"


def test_declared_tools_and_models_are_parsed(catalog: Catalog) -> None:
    declared_tools = 0
    for definition in catalog.agents.values():
        assert definition.path is not None
        frontmatter = definition.path.read_text(encoding="utf-8").split("\n---", 1)[0]
        if re.search(r"^tools:", frontmatter, re.MULTILINE):
            declared_tools += 1
            assert definition.tools is not None
        else:
            assert definition.tools is None
        declared_model = re.search(r"^model:\s*(\S+)", frontmatter, re.MULTILINE)
        assert declared_model is not None
        assert definition.model == declared_model.group(1)
    assert declared_tools == 15
    assert Counter(d.model for d in catalog.agents.values()) == {
        "sonnet": 70,
        "opus": 54,
        "inherit": 52,
        "haiku": 24,
        "fable": 2,
    }
    lead = catalog.agents["agent-teams:team-lead"]
    assert lead.tools is not None
    assert lead.tools[:5] == ("Read", "Glob", "Grep", "Bash", "Agent")
    assert len(lead.tools) == 12
    assert catalog.agents["arm-cortex-microcontrollers:arm-cortex-expert"].tools == ()
    assert catalog.agents["meigen-ai-design:image-generator"].tools == ("mcp__meigen__generate_image",)


def test_claude_code_only_tools_are_reported_not_fatal(catalog: Catalog) -> None:
    available = {*KNOWN_TOOLS, "WebSearch", "Skill"}
    missing = {name: found for name, d in catalog.agents.items() if (found := missing_tools(d, available))}
    assert sorted(missing) == [
        "agent-teams:team-debugger",
        "agent-teams:team-implementer",
        "agent-teams:team-lead",
        "agent-teams:team-reviewer",
        "meigen-ai-design:gallery-researcher",
        "meigen-ai-design:image-generator",
    ]
    lead = {item.entry: item.reason for item in missing["agent-teams:team-lead"]}
    # `Agent` is the nested Task tool here, so it is not missing; Claude Code's team tools are.
    assert lead == dict.fromkeys(
        ["TeamCreate", "TeamDelete", "TaskCreate", "TaskList", "TaskGet", "TaskUpdate", "SendMessage"],
        "it exists only in Claude Code",
    )
    [image] = missing["meigen-ai-design:image-generator"]
    assert image.entry == "mcp__meigen__generate_image"
    assert image.reason.startswith("it needs an MCP server named 'meigen'")


def test_the_validator_finds_warnings_and_the_agents_that_cannot_run_here() -> None:
    problems = validate_paths([CORPUS], KNOWN_TOOLS)
    errors = [p for p in problems if p.severity == "error"]
    # Their only tools come from an MCP server their files do not name in mcpServers (in Claude Code the session's
    # own server of that name could provide them; here an agent gets only the servers its file names).
    assert sorted(Path(p.path).name for p in errors) == ["gallery-researcher.md", "image-generator.md"]
    assert all("it needs an MCP server named 'meigen'" in p.message for p in errors)
    tools = [p for p in problems if "tool" in p.message and p.severity == "warning"]
    colors = [p for p in problems if "color" in p.message]
    assert {Path(p.path).parent.parent.name for p in tools} == {"agent-teams", "meigen-ai-design"}
    assert len(tools) == 22  # team-lead's `Agent` launches nested subagents here: no warning for it
    assert [p.message for p in colors].count(
        "color is only shown in Claude Code's interface; it has no effect here"
    ) == 9
    assert [p.message for p in colors if "magenta" in p.message] == [
        "invalid color 'magenta'; allowed: red, blue, green, yellow, purple, orange, pink, cyan; the field is ignored"
    ] * 2
    assert len(problems) == len(errors) + len(tools) + len(colors)


def test_a_warm_reload_reuses_every_definition(catalog: Catalog) -> None:
    loader = CatalogLoader(DefinitionSources(plugin_dirs=(PLUGINS,)))
    first = loader.load()
    second = loader.load()
    assert all(second.agents[name] is definition for name, definition in first.agents.items())
    assert first == catalog
