"""The table of odd agent files that Claude Code 2.1.328 was given (`reference/claude-code-2.1.328/acceptance.json`):
what it loads, under which name, and what it rejects. We load and reject the same, with two documented exceptions:
a file with no `name` loads under its file name, and `name: 12345` loads as "12345" (Claude Code drops both)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcp_subagents.definitions import CatalogLoader, DefinitionSources
from tests.support import SHARED, require_shared

FILES = {
    "no-desc": "---\nname: no-desc\n---\nBody.\n",
    "bad-yaml": "---\nname: bad-yaml\ndescription: Use when: the user asks for x: y\ntools: [Read\n---\nBody.\n",
    "colon-in-desc": "---\nname: colon-in-desc\ndescription: Use this agent when: reviewing code\n---\nBody.\n",
    "no-name": "---\ndescription: Has no name field.\n---\nBody.\n",
    "Upper_Case": "---\nname: Upper_Case\ndescription: Upper case and underscore.\n---\nBody.\n",
    "has-space": "---\nname: has space\ndescription: Name with a space.\n---\nBody.\n",
    "colon-name": "---\nname: ns:colon\ndescription: Name with a colon.\n---\nBody.\n",
    "bad-model": "---\nname: bad-model\ndescription: Unknown model.\nmodel: gpt-4o\n---\nBody.\n",
    "unknown-tool": (
        "---\nname: unknown-tool\ndescription: Lists an unknown tool.\ntools: Read, FooTool, WebSearch, NotebookEdit"
        "\n---\nBody.\n"
    ),
    "no-frontmatter": "Just a body with no frontmatter.\n",
    "file-name-differs": "---\nname: other-name\ndescription: File name differs from name.\n---\nBody.\n",
    "dotnet-framework-4.8-expert": "---\nname: dotnet-framework-4.8-expert\ndescription: Dotted name.\n---\nBody.\n",
    "bad-maxturns": "---\nname: bad-maxturns\ndescription: maxTurns not a number.\nmaxTurns: lots\n---\nBody.\n",
    "bad-perm": "---\nname: bad-perm\ndescription: Unknown permissionMode.\npermissionMode: yolo\n---\nBody.\n",
    "bad-memory": "---\nname: bad-memory\ndescription: Unknown memory scope.\nmemory: global\n---\nBody.\n",
    "unicode-name": "---\nname: ünïcode-agent\ndescription: Non-ASCII name.\n---\nBody.\n",
    "empty-body": "---\nname: empty-body\ndescription: No body.\n---\n",
    "tools-list-yaml": (
        "---\nname: tools-list-yaml\ndescription: Tools as YAML list.\ntools:\n  - Read\n  - Grep\n---\nBody.\n"
    ),
    "numeric-name": "---\nname: 12345\ndescription: Numeric name.\n---\nBody.\n",
    "long-name-" + "x" * 60: f"---\nname: long-name-{'x' * 60}\ndescription: Very long name.\n---\nBody.\n",
}
CLAUDE_CODE_LOADS = {
    "bad-maxturns",
    "bad-memory",
    "bad-model",
    "bad-perm",
    "bad-yaml",
    "colon-in-desc",
    "dotnet-framework-4.8-expert",
    "empty-body",
    "has space",
    "long-name-" + "x" * 60,
    "other-name",
    "tools-list-yaml",
    "unknown-tool",
    "Upper_Case",
    "ünïcode-agent",
}
ALSO_LOADED_HERE = {"no-name", "12345"}
REJECTED = {
    "colon-name.md": "invalid name 'ns:colon': names must not contain ':'",
    "no-desc.md": "missing required field 'description'",
}
REFERENCE = SHARED / "reference" / "claude-code-2.1.328"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    for stem, text in FILES.items():
        (agents / f"{stem}.md").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_same_files_load_under_the_same_names(project: Path) -> None:
    catalog = CatalogLoader(DefinitionSources(project_root=project)).load()

    assert set(catalog.names()) == CLAUDE_CODE_LOADS | ALSO_LOADED_HERE
    errors = {Path(error.path).name: error.error for error in catalog.errors}
    assert set(errors) == set(REJECTED)
    for file, reason in REJECTED.items():
        assert errors[file].startswith(reason)


def test_bad_optional_values_are_dropped_as_claude_code_drops_them(project: Path) -> None:
    agents = CatalogLoader(DefinitionSources(project_root=project)).load().agents

    assert agents["bad-maxturns"].max_turns is None
    assert agents["bad-perm"].permission_mode is None
    assert agents["bad-memory"].memory is None
    assert agents["bad-yaml"].description == "Use when: the user asks for x: y"
    assert agents["bad-yaml"].tools == ("[Read",)
    assert agents["tools-list-yaml"].tools == ("Read", "Grep")
    assert [len(agents[name].warnings) for name in ("bad-maxturns", "bad-perm", "bad-memory")] == [1, 1, 1]


def test_the_table_matches_the_capture() -> None:
    require_shared(REFERENCE / "acceptance.json", "Claude Code reference capture")
    capture = json.loads((REFERENCE / "acceptance.json").read_text(encoding="utf-8"))
    assert capture["files"] == FILES
    listed = set(re.findall(r"^- (.+?): ", capture["cc_listing"], re.MULTILINE))
    builtins = {"claude", "Explore", "general-purpose", "Plan", "statusline-setup"}
    assert listed - builtins == CLAUDE_CODE_LOADS


def test_a_file_without_frontmatter_is_skipped_as_silently_as_claude_code_skips_it(project: Path) -> None:
    require_shared(REFERENCE / "acceptance.json", "Claude Code reference capture")
    capture = json.loads((REFERENCE / "acceptance.json").read_text(encoding="utf-8"))
    catalog = CatalogLoader(DefinitionSources(project_root=project)).load()

    assert not [line for line in capture["cc_debug"] if "no-frontmatter" in line]  # not even a debug line
    assert not [error for error in catalog.errors if "no-frontmatter" in error.path]
    assert "no-frontmatter" not in catalog.names()
