"""What the trust question lists: exactly what trusting the folder would change, so the person decides on what
would really run, and nothing that runs (or stays off) either way."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_subagents.config.claude_settings import ClaudeSettings, Level, SettingsFile
from mcp_subagents.core.json_values import JsonObject
from mcp_subagents.definitions import AgentDefinition
from mcp_subagents.definitions.model import Source
from mcp_subagents.definitions.parse import parse_definition
from mcp_subagents.permissions.trust_question import TrustItem
from mcp_subagents.runtime.trust_offer import trust_offer


def hook(command: str) -> JsonObject:
    return {"SubagentStart": [{"hooks": [{"type": "command", "command": command}]}]}


def settings(*files: tuple[Level, Path, JsonObject]) -> ClaudeSettings:
    return ClaudeSettings(files=tuple(SettingsFile(level, path, data) for level, path, data in files))


def agent(path: Path, source: Source, extra: str = "") -> AgentDefinition:
    return parse_definition(f"---\nname: a\ndescription: d\n{extra}---\nBody\n", path=path, source=source)


def general(tmp_path: Path) -> AgentDefinition:
    return agent(tmp_path / "user-agents" / "a.md", "user")


def test_the_folders_hooks_servers_and_grants_are_listed_with_their_files(tmp_path: Path) -> None:
    project = tmp_path / "work"
    (project / ".claude").mkdir(parents=True)
    shared, local = project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["-y", "server files", "."]}}}), "utf-8"
    )
    found = trust_offer(
        settings(
            ("user", tmp_path / "home.json", {"hooks": hook("mine.sh"), "permissions": {"allow": ["Bash(ls)"]}}),
            ("project", shared, {"hooks": hook("./theirs.sh"), "permissions": {"defaultMode": "acceptEdits"}}),
            (
                "local",
                local,
                {
                    "permissions": {"allow": ["Bash(make)"], "additionalDirectories": ["../x"]},
                    "mcpServers": {"docs": {"type": "http", "url": "https://docs.example.com/mcp"}},
                },
            ),
        ),
        general(tmp_path),
        project,
        mode_fixed=False,
    )
    assert found == [
        TrustItem("hook", "./theirs.sh", str(shared), "SubagentStart"),
        TrustItem("mcp_server", "npx -y 'server files' .", str(project / ".mcp.json"), "files"),
        TrustItem("mcp_server", "http https://docs.example.com/mcp", str(local), "docs"),
        TrustItem("mode", "acceptEdits", str(shared), "permissions.defaultMode"),
        TrustItem("allow_rule", "Bash(make)", str(local)),
        TrustItem("directory", "../x", str(local)),
    ]


def test_the_running_agents_file_counts_when_it_lies_in_the_folder(tmp_path: Path) -> None:
    project, other = tmp_path / "work", tmp_path / "other"
    extra = (
        f"permissionMode: acceptEdits\nhooks: {json.dumps(hook('./agent-hook.sh'))}\n"
        'mcpServers:\n  - inline: {command: "./serve.sh"}\n'
    )
    own = agent(project / ".claude" / "agents" / "a.md", "project", extra)
    elsewhere = agent(other / ".claude" / "agents" / "a.md", "project", extra)
    path = str(project / ".claude" / "agents" / "a.md")
    assert trust_offer(settings(), own, project, mode_fixed=False) == [
        TrustItem("hook", "./agent-hook.sh", path, "SubagentStart"),
        TrustItem("mcp_server", "./serve.sh", path, "inline"),
        TrustItem("mode", "acceptEdits", path, "permissionMode of agent a"),
    ]
    assert trust_offer(settings(), elsewhere, project, mode_fixed=False) == []  # trusting this folder is not enough


def test_what_runs_or_stays_off_either_way_is_not_listed(tmp_path: Path) -> None:
    project = tmp_path / "work"
    shared = project / ".claude" / "settings.json"
    theirs: JsonObject = {
        "hooks": hook("./theirs.sh"),
        "permissions": {"allow": ["Bash(make)"], "defaultMode": "bypassPermissions"},
    }
    managed: JsonObject = {"allowManagedHooksOnly": True, "allowManagedPermissionRulesOnly": True}
    locked = settings(("project", shared, theirs), ("managed", tmp_path / "managed.json", managed))
    assert trust_offer(locked, general(tmp_path), project, mode_fixed=False) == []
    mode_only = settings(("project", shared, {"permissions": {"defaultMode": "acceptEdits"}}))
    assert trust_offer(mode_only, general(tmp_path), project, mode_fixed=True) == []  # --permission-mode decides
    home = tmp_path / "home"
    personal = home / ".claude" / "settings.json"  # a project in the home folder: its project file is the user's
    same_file = settings(("user", personal, theirs), ("project", personal, theirs))
    assert trust_offer(same_file, general(tmp_path), home, mode_fixed=False) == []
