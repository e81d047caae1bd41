"""Claude Code's settings hierarchy as the server reads it: which files, which wins, and what happens when one breaks.

Every test uses a scratch home and a scratch managed-policy location; the machine's own files are never read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.config import claude_settings
from mcp_subagents.config.claude_settings import ClaudeSettingsFiles, merge_settings
from mcp_subagents.config.settings import Settings
from mcp_subagents.core.errors import ConfigError
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from mcp_subagents.runtime.service import Subagents
from tests.support import SYSTEM_PATH, connected, last_results, make_settings, server_environment, text_of, write_agent

TASK = {"description": "work", "prompt": "Do it.", "subagent_type": "general-purpose"}


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


class Tree:
    """The five places of one scratch machine, as `make_settings` points the server at them."""

    def __init__(self, tmp_path: Path) -> None:
        self.settings = make_settings(tmp_path)
        assert self.settings.cwd is not None and self.settings.user_settings_file is not None
        assert self.settings.managed_settings_file is not None
        self.project = self.settings.cwd
        self.user = self.settings.user_settings_file
        self.shared = self.project / ".claude" / "settings.json"
        self.local = self.project / ".claude" / "settings.local.json"
        self.flag = tmp_path / "flag-settings.json"
        self.managed = self.settings.managed_settings_file

    def files(self, **overrides: Any) -> ClaudeSettingsFiles:
        from mcp_subagents.runtime.sources import settings_locations

        return ClaudeSettingsFiles(settings_locations(self.with_flag(**overrides)))

    def with_flag(self, **overrides: Any) -> Settings:
        from dataclasses import replace

        flag = {"settings_file": self.flag} if self.flag.exists() else {}
        return replace(self.settings, **{**flag, **overrides})


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


def fill_all_levels(tree: Tree) -> None:
    for level, path in (
        ("user", tree.user),
        ("project", tree.shared),
        ("local", tree.local),
        ("flag", tree.flag),
        ("managed", tree.managed),
    ):
        write_json(
            path,
            {
                "model": level,
                f"only_{level}": True,
                "permissions": {"deny": [f"Read(./{level}.secret)"], "ask": [f"Bash({level} *)"]},
                "sandbox": {"network": {"allowedDomains": [f"{level}.example"]}},
            },
        )


# --- precedence and merging ----------------------------------------------------------------------


def test_all_five_levels_merge_with_claude_codes_precedence(tree: Tree) -> None:
    fill_all_levels(tree)
    loaded = tree.files().load()
    assert [(file.level, file.path) for file in loaded.files] == [
        ("user", tree.user),
        ("project", tree.shared),
        ("local", tree.local),
        ("flag", tree.flag),
        ("managed", tree.managed),
    ]
    assert loaded.merged["model"] == "managed"  # managed > flag > local > project > user for a single value
    assert all(loaded.merged[f"only_{level}"] for level in ("user", "project", "local", "flag", "managed"))
    assert loaded.permissions["deny"] == [f"Read(./{level}.secret)" for level in claude_settings.LEVELS]
    assert loaded.sandbox == {"network": {"allowedDomains": [f"{level}.example" for level in claude_settings.LEVELS]}}
    assert loaded.at("local")[0].data["model"] == "local"  # each file's own dict stays available, with its level


@pytest.mark.parametrize(
    ("highest", "expected"),
    [("managed", "managed"), ("flag", "flag"), ("local", "local"), ("project", "project"), ("user", "user")],
)
def test_the_highest_level_that_sets_a_value_wins(tree: Tree, highest: str, expected: str) -> None:
    order = ["user", "project", "local", "flag", "managed"]
    paths = {"user": tree.user, "project": tree.shared, "local": tree.local, "flag": tree.flag, "managed": tree.managed}
    for level in order[: order.index(highest) + 1]:
        write_json(paths[level], {"permissions": {"defaultMode": "plan" if level == highest else "dontAsk"}})
    default_mode = tree.files().load().default_mode
    assert default_mode is not None
    assert default_mode[0] == "plan" and default_mode[1].level == expected


def test_every_levels_rules_apply_since_deny_beats_ask_beats_allow(tree: Tree) -> None:
    from mcp_subagents.permissions import PermissionPolicy, decide, rules_from_settings

    write_json(tree.user, {"permissions": {"allow": ["Bash(git push *)"]}})
    write_json(tree.shared, {"permissions": {"deny": ["Bash(git push --force *)"]}})
    write_json(tree.local, {"permissions": {"allow": ["Bash(git push --force *)"]}})
    rules = rules_from_settings(tree.files().load())
    policy = PermissionPolicy(cwd=tree.project, rules=rules)
    assert decide(policy, "Bash", {"command": "git push origin main"}).decision == "allow"
    verdict = decide(policy, "Bash", {"command": "git push --force origin main"})
    assert verdict.decision == "deny" and str(tree.shared) in verdict.reason


def test_merge_joins_lists_once_and_merges_objects_key_by_key() -> None:
    merged = merge_settings([{"a": [1, 2], "o": {"x": 1, "y": 1}, "s": "low"}, {"a": [2, 3], "o": {"y": 2}, "s": "hi"}])
    assert merged == {"a": [1, 2, 3], "o": {"x": 1, "y": 2}, "s": "hi"}


@pytest.mark.parametrize(
    ("sources", "levels"),
    [
        (("user", "project", "local"), ["user", "project", "local", "flag", "managed"]),
        (("user",), ["user", "flag", "managed"]),
        (("project", "local"), ["project", "local", "flag", "managed"]),
        ((), ["flag", "managed"]),
    ],
)
def test_setting_sources_choose_among_user_project_and_local(
    tree: Tree, sources: tuple[str, ...], levels: list[str]
) -> None:
    fill_all_levels(tree)
    assert [file.level for file in tree.files(setting_sources=sources).load().files] == levels


def test_the_setting_sources_flag_parses_as_claude_codes(tmp_path: Path) -> None:
    from argparse import Namespace

    from mcp_subagents.config.settings import SOURCE_OPTIONS, settings_from

    parsed = settings_from(Namespace(setting_sources="user, local"), SOURCE_OPTIONS, {"HOME": str(tmp_path)})
    assert parsed.setting_sources == ("user", "local")
    with pytest.raises(ConfigError, match="--setting-sources: must be a comma-separated list of user, project"):
        settings_from(Namespace(setting_sources="user,policy"), SOURCE_OPTIONS, {})


def test_the_managed_policy_reads_its_drop_in_folder_in_name_order(tree: Tree) -> None:
    write_json(tree.managed, {"permissions": {"deny": ["Bash(a *)"]}, "model": "base"})
    write_json(tree.managed.parent / "managed-settings.d" / "20-late.json", {"model": "late"})
    write_json(tree.managed.parent / "managed-settings.d" / "10-early.json", {"permissions": {"deny": ["Bash(b *)"]}})
    loaded = tree.files().load()
    assert [file.path.name for file in loaded.at("managed")] == [
        "managed-settings.json",
        "10-early.json",
        "20-late.json",
    ]
    assert loaded.merged["model"] == "late" and loaded.permissions["deny"] == ["Bash(a *)", "Bash(b *)"]


def test_a_policy_file_flag_replaces_the_default_location(tree: Tree, tmp_path: Path) -> None:
    write_json(tree.managed, {"model": "default place"})
    named = write_json(tmp_path / "policy.json", {"model": "named"})
    loaded = tree.files(policy_file=named).load()
    assert [file.path for file in loaded.at("managed")] == [named]


# --- files named by flags, broken files ----------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "content", "message"),
    [
        ("settings_file", None, "--settings {path}: not found"),
        ("settings_file", "{oops", "--settings {path}: invalid JSON"),
        ("policy_file", "[1]", "--policy-file {path}: must hold a JSON object"),
        ("policy_file", None, "--policy-file {path}: not found"),
        ("policy_file", '{"permissions": {"deny": ["Bash(rm -rf *"]}}', "--policy-file {path}: permissions.deny[0]"),
    ],
)
def test_a_file_named_by_a_flag_must_exist_and_be_valid(
    tree: Tree, tmp_path: Path, flag: str, content: str | None, message: str
) -> None:
    path = tmp_path / "named.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Subagents(tree.with_flag(**{flag: path}), environ={})
    assert caught.value.message.startswith(message.format(path=path)) and "\n" not in caught.value.message


def test_the_server_does_not_start_with_a_missing_policy_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    environ = server_environment(tmp_path, path=os.environ.get("PATH", SYSTEM_PATH))
    completed = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "serve", "--policy-file", str(missing), "--cwd", str(tmp_path)],
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2 and completed.stdout == b""
    [line] = completed.stderr.decode().splitlines()
    assert line.endswith(f"--policy-file {missing}: not found")


def test_a_broken_file_in_a_default_location_is_reported_and_skipped(
    tree: Tree, caplog: pytest.LogCaptureFixture
) -> None:
    tree.shared.parent.mkdir(parents=True)
    tree.shared.write_text("{not json", encoding="utf-8")
    write_json(tree.user, {"permissions": {"deny": ["Bash(rm *)"]}})
    app = Subagents(tree.settings, environ={})
    loaded = app.settings_files.load()
    assert [file.level for file in loaded.files] == ["user"]
    [problem] = loaded.problems
    assert problem.path == str(tree.shared) and problem.message.startswith("invalid JSON")
    assert f"{tree.shared}: invalid JSON" in caplog.text


def test_a_file_that_breaks_while_running_keeps_its_last_readable_rules(tree: Tree) -> None:
    write_json(tree.managed, {"permissions": {"deny": ["Bash(curl *)"]}})
    files = tree.files()
    assert files.load().permissions["deny"] == ["Bash(curl *)"]
    tree.managed.write_text('{"permissions": {"deny": [', encoding="utf-8")
    loaded = files.load()
    assert loaded.permissions["deny"] == ["Bash(curl *)"]  # the policy's deny rules do not vanish
    assert "last readable content stays in effect" in loaded.problems[0].message


def test_files_are_read_again_only_when_they_change(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    fill_all_levels(tree)
    parsed: list[Path] = []
    real_parse = claude_settings._parse  # pyright: ignore[reportPrivateUsage]

    def counting(path: Path) -> Any:
        parsed.append(path)
        return real_parse(path)

    monkeypatch.setattr(claude_settings, "_parse", counting)
    files = tree.files()
    first = files.load()
    assert len(parsed) == 5
    assert files.load() is first and len(parsed) == 5  # nothing changed: a stat per file, the same snapshot
    write_json(tree.local, {"model": "edited, and longer than before"})
    assert files.load().merged["model"] == "managed" and parsed[5:] == [tree.local]


# --- what the server does with them --------------------------------------------------------------


@pytest.mark.anyio
async def test_default_mode_from_the_user_settings_applies(tree: Tree) -> None:
    write_json(tree.user, {"permissions": {"defaultMode": "acceptEdits"}})
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), text("done")])
    async with connected(tree.settings, model=model) as client:
        await client.call_tool("Task", TASK)
    assert (tree.project / "a.txt").exists()


@pytest.mark.anyio
async def test_the_permission_mode_flag_wins_over_default_mode(tree: Tree) -> None:
    from dataclasses import replace

    write_json(tree.user, {"permissions": {"defaultMode": "acceptEdits"}})
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), text("done")])
    async with connected(replace(tree.settings, permission_mode="default"), model=model) as client:
        await client.call_tool("Task", TASK)
    assert not (tree.project / "a.txt").exists()


@pytest.mark.anyio
async def test_a_repository_cannot_grant_itself_bypass_permissions(tree: Tree) -> None:
    write_json(tree.shared, {"permissions": {"defaultMode": "bypassPermissions"}})
    write_json(tree.local, {"permissions": {"defaultMode": "bypassPermissions"}})
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), text("done")])
    async with connected(tree.settings, model=model) as client:
        await client.call_tool("Task", TASK)
    assert not (tree.project / "a.txt").exists()
    problems = tree.files().load().problems
    assert len(problems) == 2 and all("controlled by the repository" in p.message for p in problems)


@pytest.mark.anyio
async def test_a_managed_policy_can_disable_bypass_permissions(tree: Tree) -> None:
    from dataclasses import replace

    write_json(tree.managed, {"permissions": {"disableBypassPermissionsMode": "disable"}})
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), text("done")])
    async with connected(replace(tree.settings, permission_mode="bypassPermissions"), model=model) as client:
        await client.call_tool("Task", TASK)
    assert not (tree.project / "a.txt").exists()


@pytest.mark.anyio
async def test_deny_instead_of_prompting_turns_questions_into_denials(tree: Tree) -> None:
    write_json(tree.user, {"permissions": {"denyInsteadOfPrompting": True}})
    model = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "x"}), text("done")])
    async with connected(tree.settings, model=model) as client:
        body = text_of(await client.call_tool("Task", TASK))
    assert "denyInsteadOfPrompting" in body


@pytest.mark.anyio
async def test_additional_directories_join_the_allowed_area(tree: Tree, tmp_path: Path) -> None:
    shared = tmp_path / "shared-docs"
    shared.mkdir()
    (shared / "guide.md").write_text("GUIDE-MARKER\n", encoding="utf-8")
    model = ScriptedModel([tool_call("Read", {"file_path": str(shared / "guide.md")}), text("done")])
    async with connected(tree.settings, model=model) as client:
        await client.call_tool("Task", TASK)
    refused = last_results(model.requests[1])[0]
    assert refused.is_error and "GUIDE-MARKER" not in refused.content

    write_json(tree.shared, {"permissions": {"additionalDirectories": ["../shared-docs", "~/nowhere"]}})
    model = ScriptedModel([tool_call("Read", {"file_path": str(shared / "guide.md")}), text("done")])
    async with connected(tree.settings, model=model) as client:
        await client.call_tool("Task", TASK)
    untrusted = last_results(model.requests[1])[0]
    assert untrusted.is_error  # the repository's own file cannot widen the area until the project is trusted

    model = ScriptedModel([tool_call("Read", {"file_path": str(shared / "guide.md")}), text("done")])
    async with connected(tree.with_flag(trust_projects=(tree.project,)), model=model) as client:
        await client.call_tool("Task", TASK)
    read = last_results(model.requests[1])[0]
    assert not read.is_error and "GUIDE-MARKER" in read.content


@pytest.mark.anyio
async def test_a_task_deny_rule_in_the_project_settings_removes_the_agent(tree: Tree) -> None:
    write_agent(tree.project / ".claude" / "agents", "reviewer")
    write_json(tree.local, {"permissions": {"deny": ["Task(reviewer)"]}})
    async with connected(tree.settings) as client:
        tools = await client.list_tools()
    task = next(tool for tool in tools.tools if tool.name == "Task")
    assert "reviewer" not in json.dumps(task.input_schema)


def test_an_untrusted_projects_files_keep_only_what_confines(tree: Tree) -> None:
    write_json(tree.user, {"permissions": {"allow": ["Bash(ls *)"], "defaultMode": "acceptEdits"}})
    write_json(
        tree.shared,
        {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm *)"], "additionalDirectories": [".."]}},
    )
    write_json(tree.local, {"permissions": {"ask": ["Write"], "defaultMode": "acceptEdits"}})
    loaded = tree.files().load(tree.project)
    untrusted = loaded.untrusted("trust it with --trust-project")
    assert [file.data for file in untrusted.at("user")] == [file.data for file in loaded.at("user")]
    assert untrusted.permissions["allow"] == ["Bash(ls *)"]  # the user's own rule stays
    assert untrusted.permissions["deny"] == ["Bash(rm *)"] and untrusted.permissions["ask"] == ["Write"]
    assert untrusted.additional_directories == ()
    assert untrusted.default_mode is not None and untrusted.default_mode[1].level == "user"
    ignored = [str(problem) for problem in untrusted.problems]
    assert ignored == [
        f"{tree.shared}: permissions.allow, permissions.additionalDirectories ignored until the project is trusted: "
        "trust it with --trust-project",
        f"{tree.local}: permissions.defaultMode ignored until the project is trusted: trust it with --trust-project",
    ]
    write_json(tree.local, {"permissions": {"defaultMode": "plan"}})
    planning = tree.files().load(tree.project).untrusted("")
    assert planning.default_mode is not None and planning.default_mode[0] == "plan"  # a narrower mode counts
