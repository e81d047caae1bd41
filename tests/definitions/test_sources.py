from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.config.claude_settings import ClaudeSettingsFiles, SettingsLocations
from mcp_subagents.core.errors import UnknownAgentError
from mcp_subagents.definitions import AgentDefinition, Catalog, CatalogLoader, DefinitionSources
from mcp_subagents.definitions import sources as sources_module
from mcp_subagents.definitions.sources import has_many_agent_files


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def agent(folder: Path, name: str, description: str = "does things", *, filename: str | None = None) -> Path:
    return write(folder / (filename or f"{name}.md"), f"---\nname: {name}\ndescription: {description}\n---\nBody.\n")


def plugin(root: Path, *, manifest: object = None) -> Path:
    if manifest is not None:
        write(root / ".claude-plugin" / "plugin.json", json.dumps(manifest))
    return root


def settings_files(*, settings_file: Path | None = None, policy_file: Path | None = None) -> ClaudeSettingsFiles:
    """The settings hierarchy with only a `--settings` file and a managed policy at its (scratch) default place."""
    return ClaudeSettingsFiles(SettingsLocations(flag=settings_file, managed=policy_file, sources=()))


def load(*, settings_file: Path | None = None, policy_file: Path | None = None, **kwargs: Any) -> Catalog:
    files = settings_files(settings_file=settings_file, policy_file=policy_file)
    return CatalogLoader(DefinitionSources(settings_files=files, **kwargs)).load()


def descriptions(catalog: Catalog) -> dict[str, str]:
    return {name: d.description for name, d in catalog.agents.items()}


def six_sources(tmp_path: Path) -> DefinitionSources:
    """`shared` defined at every level, each with its source as description."""
    agent(tmp_path / "builtin", "shared", "built-in")
    agent(tmp_path / "user", "shared", "user")
    agent(tmp_path / "project" / ".claude" / "agents", "shared", "project .claude")
    agent(tmp_path / "project" / ".agents" / "agents", "shared", "project .agents")
    agent(tmp_path / "extra1", "shared", "extra 1")
    agent(tmp_path / "extra2", "shared", "extra 2")
    policy = write(
        tmp_path / "policy.json", json.dumps({"agents": {"shared": {"description": "policy", "prompt": "p"}}})
    )
    return DefinitionSources(
        builtin_dir=tmp_path / "builtin",
        user_dir=tmp_path / "user",
        project_root=tmp_path / "project",
        extra_dirs=(tmp_path / "extra1", tmp_path / "extra2"),
        agents_json='{"shared": {"description": "flag json", "prompt": "p"}}',
        settings_files=settings_files(policy_file=policy),
    )


@pytest.mark.parametrize(
    ("dropped", "winner"),
    [
        ((), "policy"),
        (("settings_files",), "flag json"),
        (("settings_files", "agents_json"), "extra 2"),
        (("settings_files", "agents_json", "extra_dirs"), "project .agents"),
        (("settings_files", "agents_json", "extra_dirs", "project_root"), "user"),
        (("settings_files", "agents_json", "extra_dirs", "project_root", "user_dir"), "built-in"),
    ],
)
def test_later_sources_replace_earlier_ones(tmp_path: Path, dropped: tuple[str, ...], winner: str) -> None:
    sources = six_sources(tmp_path)
    defaults = DefinitionSources()
    sources = replace(sources, **{field: getattr(defaults, field) for field in dropped})
    catalog = CatalogLoader(sources).load()
    assert catalog.errors == ()
    assert descriptions(catalog) == {"shared": winner}


def test_replaced_definitions_are_listed_in_load_order(tmp_path: Path) -> None:
    catalog = CatalogLoader(six_sources(tmp_path)).load()
    assert [(d.source, d.description) for d in catalog.overridden] == [
        ("built-in", "built-in"),
        ("user", "user"),
        ("project", "project .claude"),
        ("project", "project .agents"),
        ("flag", "extra 1"),
        ("flag", "extra 2"),
        ("flag", "flag json"),
    ]
    assert catalog.agents["shared"].source == "policy"


def test_builtins_come_first_then_names_in_case_insensitive_order(tmp_path: Path) -> None:
    for name in ("general-purpose", "Explore", "Plan"):
        agent(tmp_path / "builtin", name)
    for name in ("zeta", "Alpha", "beta"):
        agent(tmp_path / "user", name)
    catalog = load(builtin_dir=tmp_path / "builtin", user_dir=tmp_path / "user")
    assert catalog.names() == ("Explore", "general-purpose", "Plan", "Alpha", "beta", "zeta")


def test_plugin_agents_from_the_agents_folder_get_plugin_ids(tmp_path: Path) -> None:
    root = plugin(tmp_path / "folder-name", manifest={"name": "kit", "version": "1.0.0"})
    agent(root / "agents", "reviewer")
    agent(root / "agents" / "nested", "helper")
    catalog = load(plugin_dirs=(root,))
    assert catalog.names() == ("kit:helper", "kit:reviewer")
    d = catalog.agents["kit:reviewer"]
    assert (d.source, d.plugin, d.path) == ("plugin", "kit", root / "agents" / "reviewer.md")


def test_plugin_without_manifest_is_named_after_its_folder(tmp_path: Path) -> None:
    agent(tmp_path / "loose" / "agents", "a")
    assert load(plugin_dirs=(tmp_path / "loose",)).names() == ("loose:a",)


def test_plugin_json_agents_list_replaces_the_agents_folder(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p", manifest={"name": "kit", "agents": ["./custom/one.md", "./more"]})
    agent(root / "custom", "one")
    agent(root / "custom", "not-listed")
    agent(root / "more", "two")
    agent(root / "agents", "default-folder")
    assert load(plugin_dirs=(root,)).names() == ("kit:one", "kit:two")


def test_plugin_json_agents_may_be_a_single_path(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p", manifest={"name": "kit", "agents": "./agents"})
    agent(root / "agents", "one")
    assert load(plugin_dirs=(root,)).names() == ("kit:one",)


def test_a_folder_of_plugins_loads_each_plugin(tmp_path: Path) -> None:
    agent(plugin(tmp_path / "plugins" / "alpha", manifest={"name": "alpha"}) / "agents", "a")
    agent(tmp_path / "plugins" / "beta" / "agents", "b")
    plugin(tmp_path / "plugins" / "no-agents", manifest={"name": "no-agents"})
    agent(tmp_path / "plugins" / "not-a-plugin" / "docs", "stray")
    agent(tmp_path / "plugins" / ".hidden" / "agents", "h")
    catalog = load(plugin_dirs=(tmp_path / "plugins",))
    assert catalog.names() == ("alpha:a", "beta:b")
    assert catalog.errors == ()


def test_the_later_plugin_dir_wins_for_the_same_plugin(tmp_path: Path) -> None:
    agent(plugin(tmp_path / "v1", manifest={"name": "kit"}) / "agents", "a", "old")
    agent(plugin(tmp_path / "v2", manifest={"name": "kit"}) / "agents", "a", "new")
    catalog = load(plugin_dirs=(tmp_path / "v1", tmp_path / "v2"))
    assert descriptions(catalog) == {"kit:a": "new"}


def test_plugin_manifest_problems_are_reported(tmp_path: Path) -> None:
    broken = plugin(tmp_path / "plugins" / "broken")
    write(broken / ".claude-plugin" / "plugin.json", "{not json")
    agent(broken / "agents", "skipped")
    missing = plugin(tmp_path / "plugins" / "missing", manifest={"name": "missing", "agents": ["./nope.md"]})
    bad_field = plugin(tmp_path / "plugins" / "bad-field", manifest={"agents": 3})
    bad_name = plugin(tmp_path / "plugins" / "bad-name", manifest={"name": "a:b", "agents": []})
    catalog = load(plugin_dirs=(tmp_path / "plugins",))
    assert catalog.agents == {}
    assert [(Path(e.path), e.error.split(":")[0]) for e in catalog.errors] == [
        (bad_field / ".claude-plugin" / "plugin.json", "'agents' must be a path or a list of paths"),
        (bad_name, "invalid plugin name 'a"),
        (broken / ".claude-plugin" / "plugin.json", "invalid JSON"),
        (missing / ".claude-plugin" / "plugin.json", "'agents' lists './nope.md', which does not exist"),
    ]


def test_broken_files_are_reported_with_reasons_and_good_files_still_load(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    agent(folder, "good")
    write(folder / "bad-yaml.md", '---\nname: x\ndescription: d\ntools: "Read\n---\n')
    write(folder / "no-frontmatter.md", "# Notes\n")  # not an agent file: skipped quietly, as Claude Code does
    write(folder / "no-description.md", "---\nname: nodesc\n---\nBody.\n")
    write(folder / "bad-name.md", "---\nname: a:b\ndescription: d\n---\n")
    write(folder / "latin1.md", "---\nname: caf\xe9\ndescription: d\n---\n".encode("latin-1"))
    write(folder / "README.md", "# What these agents do\n")
    catalog = load(user_dir=folder)
    assert catalog.names() == ("good",)
    reasons = {Path(e.path).name: e.error for e in catalog.errors}
    assert sorted(reasons) == ["bad-name.md", "bad-yaml.md", "latin1.md", "no-description.md"]
    assert reasons["bad-yaml.md"].startswith("invalid YAML frontmatter at line")
    assert reasons["no-description.md"].startswith("missing required field 'description'")
    assert reasons["bad-name.md"].startswith("invalid name 'a:b'")
    assert reasons["latin1.md"].startswith("not UTF-8 text")


def test_markdown_without_frontmatter_is_not_an_agent_and_no_error(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    agent(folder, "good")
    write(folder / "CLAUDE.md", "# House rules\nBe brief.\n")
    write(folder / "CONTRIBUTING.md", "\n\nSend patches.\n")
    write(folder / "broken.md", "---\nname: broken\n---\nNo description.\n")
    catalog = load(user_dir=folder)
    assert catalog.names() == ("good",)
    assert [Path(error.path).name for error in catalog.errors] == ["broken.md"]


def test_a_readme_with_frontmatter_is_an_agent(tmp_path: Path) -> None:
    write(tmp_path / "agents" / "README.md", "---\nname: readme-agent\ndescription: d\n---\n")
    assert load(user_dir=tmp_path / "agents").names() == ("readme-agent",)


def test_missing_folders_and_files_are_not_errors(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    catalog = load(
        builtin_dir=nowhere,
        plugin_dirs=(nowhere,),
        user_dir=nowhere,
        project_root=nowhere,
        extra_dirs=(nowhere,),
        policy_file=nowhere / "policy.json",
    )
    assert catalog == Catalog(agents={})
    # A file named by --settings must exist: the server refuses to start without it (see test_claude_settings).
    [error] = load(settings_file=nowhere / "settings.json").errors
    assert (error.path, error.error) == (str(nowhere / "settings.json"), "not found")


def test_folders_are_scanned_recursively_skipping_hidden_ones_and_symlink_loops(tmp_path: Path) -> None:
    agent(tmp_path / "agents" / "team" / "deep", "deep")
    agent(tmp_path / "agents" / ".git", "hidden")
    write(tmp_path / "agents" / "notes.txt", "not markdown")
    os.symlink(tmp_path / "agents", tmp_path / "agents" / "team" / "loop")
    assert load(user_dir=tmp_path / "agents").names() == ("deep",)


def test_an_extra_dir_may_be_a_single_file(tmp_path: Path) -> None:
    file = agent(tmp_path, "solo")
    assert load(extra_dirs=(file,)).agents["solo"].source == "flag"


def test_agents_json_valid_and_broken(tmp_path: Path) -> None:
    good = load(agents_json='{"rev": {"description": "Reviews", "prompt": "You review.", "tools": "Read"}}')
    assert good.agents["rev"].tools == ("Read",)
    assert good.agents["rev"].source == "flag"
    broken = load(agents_json="{oops", user_dir=agent(tmp_path / "u", "kept").parent)
    assert broken.names() == ("kept",)
    assert [e.path for e in broken.errors] == ["--agents"]
    assert broken.errors[0].error.startswith("invalid JSON")


def test_policy_agents_win_and_policy_problems_are_reported(tmp_path: Path) -> None:
    agent(tmp_path / "user", "locked", "user version")
    policy = write(
        tmp_path / "policy.json",
        json.dumps({"agents": {"locked": {"description": "policy version", "prompt": "p"}, "bad": {"prompt": "p"}}}),
    )
    catalog = load(user_dir=tmp_path / "user", policy_file=policy, agents_json='{"locked": {"description": "flag"}}')
    assert descriptions(catalog) == {"locked": "policy version"}
    assert catalog.agents["locked"].source == "policy"
    assert [(e.path, e.error.split(":")[0]) for e in catalog.errors] == [(str(policy), "agent 'bad'")]


def test_deny_rules_remove_agents(tmp_path: Path) -> None:
    for name in ("Explore", "Plan", "general-purpose", "kept"):
        agent(tmp_path / "builtin", name)
    agent(plugin(tmp_path / "kit", manifest={"name": "kit"}) / "agents", "secret")
    settings = write(
        tmp_path / "settings.json",
        json.dumps({"permissions": {"deny": ["Task(Explore)", "Agent( kit:secret )", "Bash(rm *)", "Task(ghost)", 3]}}),
    )
    policy = write(tmp_path / "policy.json", json.dumps({"permissions": {"deny": ["Agent(Plan)"]}}))
    catalog = load(
        builtin_dir=tmp_path / "builtin", plugin_dirs=(tmp_path / "kit",), settings_file=settings, policy_file=policy
    )
    assert catalog.names() == ("general-purpose", "kept")
    assert catalog.denied == ("Explore", "Plan", "kit:secret")
    assert catalog.errors == ()


def test_deny_rules_match_the_full_id(tmp_path: Path) -> None:
    agent(plugin(tmp_path / "kit", manifest={"name": "kit"}) / "agents", "secret")
    settings = write(tmp_path / "settings.json", json.dumps({"permissions": {"deny": ["Task(secret)"]}}))
    assert load(plugin_dirs=(tmp_path / "kit",), settings_file=settings).names() == ("kit:secret",)


@pytest.mark.parametrize(
    ("content", "needle"),
    [("{broken", "invalid JSON"), ("[]", "must hold a JSON object"), (b"\xff\xfe", "cannot read")],
)
def test_a_broken_settings_file_is_an_error_entry(tmp_path: Path, content: str | bytes, needle: str) -> None:
    settings = write(tmp_path / "settings.json", content)
    catalog = load(user_dir=agent(tmp_path / "u", "a").parent, settings_file=settings)
    assert catalog.names() == ("a",)
    assert [e.path for e in catalog.errors] == [str(settings)]
    assert needle in catalog.errors[0].error


def test_a_broken_policy_file_is_reported_once(tmp_path: Path) -> None:
    policy = write(tmp_path / "policy.json", "{broken")
    [error] = load(policy_file=policy).errors
    assert error.path == str(policy)
    assert error.error.startswith("invalid JSON")


def test_unchanged_files_are_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent(tmp_path / "agents", "a")
    agent(tmp_path / "agents", "b")
    loader = CatalogLoader(DefinitionSources(user_dir=tmp_path / "agents"))
    first = loader.load()
    calls: list[Any] = []
    real = sources_module.parse_definition

    def counting(text: str, **kwargs: Any) -> AgentDefinition:
        calls.append(kwargs["path"])
        return real(text, **kwargs)

    monkeypatch.setattr(sources_module, "parse_definition", counting)
    second = loader.load()
    assert calls == []
    assert second.agents["a"] is first.agents["a"]
    assert second == first


def test_edits_additions_and_deletions_show_on_the_next_load(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    edited = agent(folder, "a", "before")
    deleted = agent(folder, "b")
    loader = CatalogLoader(DefinitionSources(user_dir=folder))
    first = loader.load()

    agent(folder, "a", "after!")
    stat = edited.stat()
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    deleted.unlink()
    agent(folder, "c")
    second = loader.load()
    assert descriptions(second) == {"a": "after!", "c": "does things"}
    assert second.agents["a"] is not first.agents["a"]


def test_a_file_fixed_after_an_error_loads(tmp_path: Path) -> None:
    broken = write(tmp_path / "agents" / "x.md", "---\nname: x\n---\n")
    loader = CatalogLoader(DefinitionSources(user_dir=tmp_path / "agents"))
    assert len(loader.load().errors) == 1
    broken.write_text("---\nname: x\ndescription: now fixed\n---\n", encoding="utf-8")
    catalog = loader.load()
    assert (catalog.names(), catalog.errors) == (("x",), ())


def test_get_and_require(tmp_path: Path) -> None:
    catalog = load(user_dir=agent(tmp_path / "u", "here").parent)
    assert catalog.get("here") is catalog.require("here")
    assert catalog.get("gone") is None
    with pytest.raises(UnknownAgentError, match=r"Agent type 'gone' not found\. Available agents: here"):
        catalog.require("gone")


def test_a_project_folder_that_is_the_user_folder_is_read_once(tmp_path: Path) -> None:
    agent(tmp_path / ".claude" / "agents", "mine")
    catalog = load(user_dir=tmp_path / ".claude" / "agents", project_root=tmp_path)
    assert catalog.agents["mine"].source == "user"
    assert catalog.overridden == ()


def test_many_agent_files_are_told_from_a_few_by_listing_folders(tmp_path: Path) -> None:
    project = tmp_path / "project"
    for number in range(3):
        agent(project / ".claude" / "agents" / "team", f"p{number}")
    agent(project / ".agents" / "agents", "q")
    agent(tmp_path / "user", "u")
    write(tmp_path / "user" / "notes.txt", "not an agent")
    agent(tmp_path / "user" / ".hidden", "h")
    agent(tmp_path / "plugins" / "tools" / "agents", "t")
    single = agent(tmp_path / "one", "x")
    sources = DefinitionSources(
        user_dir=tmp_path / "user", project_root=project, plugin_dirs=(tmp_path / "plugins",), extra_dirs=(single,)
    )
    assert has_many_agent_files(sources, 7)  # 3 + 1 + 1 + 1 + 1: the hidden folder and the text file do not count
    assert not has_many_agent_files(sources, 8)
    assert not has_many_agent_files(DefinitionSources(project_root=tmp_path / "missing"), 1)
