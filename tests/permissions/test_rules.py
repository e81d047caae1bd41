from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_subagents.config.claude_settings import ClaudeSettingsFiles, SettingsLocations
from mcp_subagents.core.errors import ConfigError
from mcp_subagents.permissions import PermissionRules, RuleError, parse_rule, rules_from_settings
from mcp_subagents.permissions.patterns import (
    Bases,
    PatternError,
    compile_command_pattern,
    compile_domain_pattern,
    compile_path_pattern,
)

# --- grammar -------------------------------------------------------------------------------------


def test_a_bare_tool_name_is_a_whole_tool_rule() -> None:
    rule = parse_rule("  Bash  ")
    assert (rule.text, rule.tool, rule.specifier, rule.kind) == ("Bash", "Bash", None, "tool")


def test_a_star_specifier_means_the_whole_tool() -> None:
    assert parse_rule("Bash(*)").specifier is None
    assert parse_rule("Read( * )").kind == "tool"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Read(./src/**)", "path"),
        ("Edit(**/*.env)", "path"),
        ("Write(//tmp/x)", "path"),
        ("Glob(~/notes/**)", "path"),
        ("Bash(git status)", "command"),
        ("Bash(npm run test:*)", "command"),
        ("WebFetch(domain:example.com)", "domain"),
        ("mcp__github", "mcp"),
        ("mcp__github__*", "mcp"),
        ("mcp__github__create_issue", "mcp"),
        ("Task(Explore)", "agent"),
        ("Agent(Plan)", "agent"),
        ("WebSearch", "tool"),
        ("Skill(deploy)", "other"),
    ],
)
def test_rule_kinds(text: str, kind: str) -> None:
    assert parse_rule(text).kind == kind


def test_the_source_is_kept_for_messages() -> None:
    rule = parse_rule("Bash(rm *)", source="/p/settings.json")
    assert rule.where("deny") == '"Bash(rm *)" in permissions.deny of /p/settings.json'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("Bash(", 'must end with ")"'),
        ("Bash(git status", 'must end with ")"'),
        ("Bash)", 'without "("'),
        ("Bash()", "parentheses are empty"),
        ("(git status)", "no tool name"),
        ("Ba sh", "not a tool name"),
        ("3D", "not a tool name"),
        ("WebFetch(https://example.com)", "domain:example.com"),
        ("WebFetch(domain:)", "not a host name"),
        ("WebFetch(domain:example.com/path)", "not a host name"),
        ("mcp__github(x)", "no parentheses"),
        ("mcp__", "MCP rule"),
        ("Read(!secret)", "negated"),
        ("Edit(a\\)", "gitignore"),
    ],
)
def test_bad_rules_raise_rule_error_naming_the_rule(text: str, problem: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_rule(text)
    assert problem in caught.value.message
    assert json.dumps(text.strip()) in caught.value.message
    assert isinstance(caught.value, ConfigError)


# --- which tools a rule is about -----------------------------------------------------------------


def test_read_rules_cover_every_read_tool_and_edit_rules_every_editing_tool() -> None:
    read, edit = parse_rule("Read(src/**)"), parse_rule("Edit")
    assert [t for t in ("Read", "Glob", "Grep", "Write", "Edit", "Bash") if read.applies_to(t)] == [
        "Read",
        "Glob",
        "Grep",
    ]
    assert [t for t in ("Read", "Write", "Edit", "NotebookEdit", "Bash") if edit.applies_to(t)] == [
        "Write",
        "Edit",
        "NotebookEdit",
    ]


def test_tool_specific_rules_cover_only_their_tool() -> None:
    assert parse_rule("Write(x)").applies_to("Write")
    assert not parse_rule("Write(x)").applies_to("Edit")
    assert not parse_rule("Grep").applies_to("Glob")


@pytest.mark.parametrize("text", ["mcp__github", "mcp__github__*"])
def test_mcp_server_rules_cover_every_tool_of_that_server(text: str) -> None:
    rule = parse_rule(text)
    assert rule.applies_to("mcp__github__create_issue")
    assert not rule.applies_to("mcp__githubber__x")
    assert not rule.applies_to("mcp__gitlab__create_issue")


def test_an_mcp_tool_rule_covers_only_that_tool() -> None:
    rule = parse_rule("mcp__github__create_issue")
    assert rule.applies_to("mcp__github__create_issue")
    assert not rule.applies_to("mcp__github__close_issue")


def test_agent_rules_never_apply_to_tool_calls() -> None:
    assert not parse_rule("Task(Explore)").applies_to("Task")
    assert not parse_rule("Agent").applies_to("Agent")


# --- path patterns -------------------------------------------------------------------------------


@pytest.fixture
def bases(tmp_path: Path) -> Bases:
    return Bases(cwd=tmp_path / "work", project=tmp_path / "project", home=tmp_path / "home")


def matches(pattern: str, path: Path | str, bases: Bases, *, directory: bool = False) -> bool:
    return compile_path_pattern(pattern).matches(str(path), bases, directory=directory)


def test_relative_patterns_are_gitignore_style_under_the_working_directory(bases: Bases) -> None:
    work = bases.cwd
    assert matches("*.env", work / ".env", bases)
    assert matches("*.env", work / "deep" / "prod.env", bases)  # no inner slash: any depth
    assert matches("src/*.py", work / "src" / "a.py", bases)
    assert not matches("src/*.py", work / "src" / "sub" / "a.py", bases)  # * stays in one directory
    assert matches("src/**", work / "src" / "sub" / "a.py", bases)  # ** crosses directories
    assert not matches("src/**", work / "lib" / "src" / "a.py", bases)  # an inner slash anchors
    assert matches("secrets", work / "secrets" / "key.pem", bases)  # a directory covers its content
    assert not matches("*.env", bases.home / ".env", bases)  # outside the working directory


def test_dot_slash_anchors_to_the_working_directory(bases: Bases) -> None:
    assert matches("./.env", bases.cwd / ".env", bases)
    assert not matches("./.env", bases.cwd / "sub" / ".env", bases)
    assert matches(".", bases.cwd / "any" / "file", bases)


def test_double_slash_is_absolute_from_the_filesystem_root(bases: Bases) -> None:
    assert matches("//etc/**", "/etc/passwd", bases)
    assert not matches("//etc/**", "/usr/etc/passwd", bases)


def test_tilde_is_the_home_directory(bases: Bases) -> None:
    assert matches("~/.ssh/**", bases.home / ".ssh" / "id_rsa", bases)
    assert not matches("~/.ssh/**", bases.cwd / ".ssh" / "id_rsa", bases)
    assert matches("~", bases.home / "x", bases)


def test_single_slash_is_relative_to_the_project_root(bases: Bases) -> None:
    assert matches("/config/*.json", bases.project / "config" / "a.json", bases)
    assert not matches("/config/*.json", bases.cwd / "config" / "a.json", bases)


def test_a_directory_matches_when_the_pattern_covers_it_whole(bases: Bases) -> None:
    assert matches("secrets/**", bases.cwd / "secrets", bases, directory=True)
    assert matches("**", bases.cwd, bases, directory=True)
    assert not matches("*.env", bases.cwd, bases, directory=True)
    assert not matches("secrets/**", bases.cwd / "secrets", bases)  # as a file, the directory itself is not inside


def test_patterns_match_through_a_symlinked_base(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    bases = Bases(cwd=tmp_path / "alias", project=tmp_path, home=tmp_path)
    assert matches("*.env", real / ".env", bases)


@pytest.mark.parametrize("pattern", ["!x", "#comment"])
def test_path_patterns_that_gitignore_would_not_match_literally_are_refused(pattern: str) -> None:
    with pytest.raises(PatternError):
        compile_path_pattern(pattern)


# --- command patterns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("git status", "git status", True),
        ("git status", "git status --short", False),
        ("git  status", "git status", True),  # whitespace in the rule is normalized
        ("npm run test:*", "npm run test", True),
        ("npm run test:*", "npm run test -- --watch", True),
        ("npm run test:*", "npm run testing", False),  # legacy prefix stops at a word boundary
        ("git diff *", "git diff", True),  # a single trailing wildcard is optional
        ("git diff *", "git diff HEAD~1", True),
        ("git diff *", "git difftool", False),
        ("ls*", "lsof", True),
        ("* install", "npm install", True),
        ("* install", "install", False),
        ("git * main", "git push origin main", True),
        ("git * main", "git push origin main --force", False),
        ("echo \\*", "echo *", True),
        ("echo \\*", "echo hi", False),
        ("echo *", "echo 'multi\nline'", True),
    ],
)
def test_command_patterns(pattern: str, command: str, expected: bool) -> None:
    assert compile_command_pattern(pattern).matches(command) is expected


def test_only_patterns_without_wildcards_are_exact() -> None:
    assert compile_command_pattern("git status").exact
    assert not compile_command_pattern("git status:*").exact
    assert compile_command_pattern("echo \\*").exact


# --- domains -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "url", "expected"),
    [
        ("domain:example.com", "https://example.com/page", True),
        ("domain:example.com", "http://EXAMPLE.com:8080/x", True),
        ("domain:example.com", "https://docs.example.com/", False),  # subdomains need *.example.com
        ("domain:example.com", "https://example.com.evil.net/", False),
        ("domain:example.com", "https://example.com@evil.net/", False),
        ("domain:*.example.com", "https://docs.example.com/", True),
        ("domain:*.example.com", "https://example.com/", False),
        ("domain:*", "https://anything.org/", True),
        ("domain:example.com", "not a url", False),
        ("domain:[::1]", "http://[::1]:3000/", True),
    ],
)
def test_domain_patterns(pattern: str, url: str, expected: bool) -> None:
    assert compile_domain_pattern(pattern).matches(url) is expected


# --- loading -------------------------------------------------------------------------------------


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def load_rules(settings: Path | None, policy: Path | None) -> PermissionRules:
    files = ClaudeSettingsFiles(SettingsLocations(flag=settings, managed=policy, managed_named=True, sources=()))
    return rules_from_settings(files.load())


def test_rules_load_from_the_settings_file_and_the_policy_adds_its_own(tmp_path: Path) -> None:
    settings = write_json(
        tmp_path / "settings.json",
        {"permissions": {"allow": ["Bash(git status)", "Read"], "deny": ["Bash(rm *)"], "defaultMode": "plan"}},
    )
    policy = write_json(
        tmp_path / "managed.json",
        {"permissions": {"deny": ["WebFetch"], "ask": ["Bash(git push *)"], "disableBypassPermissionsMode": "disable"}},
    )
    rules = load_rules(settings, policy)
    assert [r.text for r in rules.allow] == ["Bash(git status)", "Read"]
    assert [r.text for r in rules.deny] == ["Bash(rm *)", "WebFetch"]
    assert [r.text for r in rules.ask] == ["Bash(git push *)"]
    assert rules.deny[1].source == str(policy)
    assert rules.bypass_disabled
    assert rules.errors == ()


def test_bad_entries_are_reported_and_the_good_ones_still_load(tmp_path: Path) -> None:
    settings = write_json(
        tmp_path / "settings.json",
        {
            "permissions": {
                "allow": ["Bash(git status)", "Bash(", 42],
                "ask": "Bash",
                "defaultMode": "yolo",
                "additionalDirectories": "../shared",
            }
        },
    )
    rules = load_rules(settings, None)
    assert [r.text for r in rules.allow] == ["Bash(git status)"]
    assert len(rules.errors) == 5
    assert all(error.startswith(str(settings)) for error in rules.errors)
    joined = "\n".join(rules.errors)
    assert "permissions.allow[1]" in joined
    assert "permissions.allow[2] must be a string" in joined
    assert "permissions.ask must be a list" in joined
    assert "defaultMode 'yolo'" in joined
    assert "additionalDirectories must be a list" in joined


def test_a_permissions_entry_that_is_not_an_object_is_reported(tmp_path: Path) -> None:
    rules = load_rules(write_json(tmp_path / "settings.json", {"permissions": []}), None)
    assert rules.allow == rules.ask == rules.deny == ()
    assert rules.errors == (f"{tmp_path / 'settings.json'}: 'permissions' must be an object",)


def test_no_files_means_no_rules() -> None:
    assert load_rules(None, None) == PermissionRules()


def test_a_file_without_permissions_has_no_rules(tmp_path: Path) -> None:
    assert load_rules(write_json(tmp_path / "s.json", {"model": "opus"}), None) == PermissionRules()


def test_a_managed_policy_can_keep_only_its_own_rules(tmp_path: Path) -> None:
    settings = write_json(tmp_path / "settings.json", {"permissions": {"allow": ["Bash"], "deny": ["Read(x)"]}})
    policy = write_json(
        tmp_path / "managed.json", {"allowManagedPermissionRulesOnly": True, "permissions": {"deny": ["WebFetch"]}}
    )
    rules = load_rules(settings, policy)
    assert (rules.allow, [r.text for r in rules.deny]) == ((), ["WebFetch"])


def test_rules_of_raises_on_a_bad_entry() -> None:
    with pytest.raises(RuleError):
        PermissionRules.of(allow=["Bash("])


def test_a_path_pattern_with_a_bad_character_range_is_a_rule_error() -> None:
    with pytest.raises(RuleError, match="gitignore"):
        parse_rule("Read([9-0])")


def test_a_path_pattern_python_warns_about_still_parses() -> None:
    assert parse_rule("Read([[a]x)").kind == "path"


def test_wildcard_matching_does_not_backtrack_on_hostile_commands() -> None:
    pattern = compile_command_pattern("a*a*a*a*a*a*a*a*b")
    assert not pattern.matches("a" * 20_000)
    assert pattern.matches("a" * 20_000 + "b")
