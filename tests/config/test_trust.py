"""Project trust as Claude Code records it, and as --trust-project grants it."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_subagents.config.trust import ProjectTrust, agent_file_project


def state(path: Path, trusted: dict[str, bool]) -> Path:
    projects = {folder: {"hasTrustDialogAccepted": value} for folder, value in trusted.items()}
    path.write_text(json.dumps({"projects": projects, "numStartups": 3}), encoding="utf-8")
    return path


def test_a_project_claude_code_trusted_is_trusted_and_the_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    config = state(tmp_path / ".claude.json", {str(project): False})
    trust = ProjectTrust(config)
    assert not trust.is_trusted(project)
    state(config, {str(project): True, "/elsewhere": True})
    assert trust.is_trusted(project)


def test_a_folder_inside_a_trusted_repository_is_trusted_but_a_sibling_is_not(tmp_path: Path) -> None:
    repository, sibling = tmp_path / "repo", tmp_path / "other"
    (repository / ".git").mkdir(parents=True)
    (repository / "pkg").mkdir()
    sibling.mkdir()
    trust = ProjectTrust(state(tmp_path / ".claude.json", {str(repository): True}))
    assert trust.is_trusted(repository / "pkg") and not trust.is_trusted(sibling)


def test_a_symlinked_path_to_a_trusted_project_is_trusted(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (tmp_path / "link").symlink_to(project)
    assert ProjectTrust(state(tmp_path / ".claude.json", {str(project): True})).is_trusted(tmp_path / "link")


def test_trust_project_flag_and_missing_or_broken_state(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    broken = tmp_path / ".claude.json"
    broken.write_text("{not json", encoding="utf-8")
    assert not ProjectTrust(broken).is_trusted(project)
    assert not ProjectTrust(tmp_path / "missing.json").is_trusted(project)
    assert ProjectTrust(broken, trusted=[project]).is_trusted(project)
    assert "--trust-project" in ProjectTrust(broken).why_untrusted(project)


def test_agent_files_belong_to_the_project_that_holds_their_folder(tmp_path: Path) -> None:
    assert agent_file_project(tmp_path / "repo" / ".claude" / "agents" / "team" / "x.md") == tmp_path / "repo"
    assert agent_file_project(tmp_path / "repo" / ".agents" / "agents" / "x.md") == tmp_path / "repo"
    assert agent_file_project(tmp_path / "home" / "agents" / "x.md") is None


def test_a_repositorys_agent_file_needs_both_its_own_project_and_the_runs_project_trusted(tmp_path: Path) -> None:
    from mcp_subagents.definitions.parse import parse_definition
    from mcp_subagents.definitions.trust import untrusted_source

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for project in (mine, theirs):
        (project / ".claude" / "agents").mkdir(parents=True)
    trust = ProjectTrust(state(tmp_path / ".claude.json", {str(mine): True}))
    text = "---\nname: a\ndescription: d\npermissionMode: acceptEdits\n---\nB\n"
    theirs_file = parse_definition(text, path=theirs / ".claude" / "agents" / "a.md", source="project")
    mine_file = parse_definition(text, path=mine / ".claude" / "agents" / "a.md", source="project")
    users_file = parse_definition(text, path=tmp_path / "user-agents" / "a.md", source="user")
    assert untrusted_source(trust, theirs_file, mine) == theirs  # run in a trusted project, the file is not
    assert untrusted_source(trust, mine_file, theirs) == theirs
    assert untrusted_source(trust, mine_file, mine) is None
    assert untrusted_source(trust, users_file, theirs) is None  # the person's own files are always trusted


def test_a_plugin_agent_runs_without_mode_hooks_and_servers_and_one_warning_names_them(tmp_path: Path) -> None:
    from mcp_subagents.definitions.parse import parse_definition
    from mcp_subagents.definitions.trust import without_plugin_extras

    hooks = '{"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}'
    text = f"---\nname: a\ndescription: d\npermissionMode: acceptEdits\nhooks: {hooks}\n---\nB\n"
    path = tmp_path / "kit" / "agents" / "a.md"
    definition = parse_definition(text, path=path, source="plugin", plugin="kit")
    runs, warning = without_plugin_extras(definition)
    assert (runs.permission_mode, runs.hooks, runs.mcp_servers) == (None, None, ())
    assert warning is not None
    assert warning.startswith(f"agent {definition.name} ({path}): permissionMode, hooks ignored")
    plain = parse_definition("---\nname: b\ndescription: d\n---\nB\n", path=path, source="plugin", plugin="kit")
    assert without_plugin_extras(plain) == (plain, None)
    users = parse_definition(text, path=path, source="user")
    assert without_plugin_extras(users) == (users, None)
