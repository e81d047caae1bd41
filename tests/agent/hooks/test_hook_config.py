"""Hook configuration as Claude Code writes it: events, matcher groups, handlers, and what is reported and skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.agent.hooks.conditions import condition_matches
from mcp_subagents.agent.hooks.config import compile_matcher, parse_hooks
from mcp_subagents.permissions.rules import parse_rule


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        (None, "Bash", True),
        ("", "Read", True),
        ("*", "Write", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),
        ("Edit|Write", "Write", True),
        ("Edit|Write", "Read", False),
        ("mcp__memory__.*", "mcp__memory__create", True),
        ("mcp__memory__.*", "mcp__files__read", False),
        ("mcp__memory", "mcp__memory__create", False),  # letters and _ only: an exact name, as Claude Code says
        ("^Notebook", "NotebookEdit", True),
        ("Web.*", "WebFetch", True),
    ],
)
def test_matchers_follow_claude_codes_rules(matcher: str | None, tool: str, expected: bool) -> None:
    assert compile_matcher(matcher).matches(tool) is expected


def test_a_bad_entry_is_reported_and_the_rest_still_loads() -> None:
    parsed = parse_hooks(
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]},
                {"matcher": "([", "hooks": [{"type": "command", "command": "./never.sh"}]},
                {"matcher": "Read", "hooks": [{"type": "http", "url": "http://localhost/x"}]},
                {"matcher": "Read", "hooks": [{"type": "command"}]},
                {"matcher": "Grep", "hooks": [{"type": "command", "command": "x", "if": "Bash(("}]},
            ],
            "NoSuchEvent": [],
            "SessionStart": [{"hooks": [{"type": "command", "command": "./start.sh"}]}],
        },
        origin="settings.json",
    )
    [group] = parsed.hooks.groups
    assert group.event == "PreToolUse" and group.hooks[0].command == "./guard.sh" and group.hooks[0].timeout_s == 5
    problems = "\n".join(parsed.problems)
    assert "settings.json: hooks.PreToolUse[1]: matcher '([' is not a valid regular expression" in problems
    assert "'http' hooks are not supported by this server yet (only 'command'); skipped" in problems
    assert "hooks.PreToolUse[3].hooks[0]: a command hook needs 'command' as text" in problems
    assert "hooks.PreToolUse[4].hooks[0]: 'if': Invalid permission rule" in problems
    assert "hooks.NoSuchEvent: unknown hook event" in problems
    assert "SessionStart" not in problems  # Claude Code's own session event: left to Claude Code, silently


def test_an_agent_files_stop_hook_becomes_subagent_stop_and_session_events_are_named() -> None:
    parsed = parse_hooks(
        {
            "Stop": [{"hooks": [{"type": "command", "command": "./done.sh"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./never.sh"}]}],
        },
        origin="agent x",
        frontmatter=True,
    )
    assert [group.event for group in parsed.hooks.groups] == ["SubagentStop"]
    assert parsed.ignored_events == ("UserPromptSubmit",)
    assert parsed.problems == ()


def test_the_same_command_runs_once_per_event() -> None:
    entry = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}
    hooks = parse_hooks({"PreToolUse": [entry, {**entry, "matcher": "*"}]}, origin="x").hooks
    assert [hook.command for hook in hooks.handlers("PreToolUse", "Bash")] == ["./audit.sh"]
    assert hooks.handlers("PostToolUse", "Bash") == []


@pytest.mark.parametrize(
    ("rule", "tool", "arguments", "expected"),
    [
        ("Bash(git push *)", "Bash", {"command": "npm test && git push origin main"}, True),
        ("Bash(git push *)", "Bash", {"command": "FOO=bar git push origin"}, True),
        ("Bash(git push *)", "Bash", {"command": "git status"}, False),
        ("Bash(rm *)", "Bash", {"command": "echo $(( 1 +"}, True),  # too complex to read: the guard runs
        ("Edit(*.ts)", "Write", {"file_path": "src/app.ts", "content": ""}, True),
        ("Edit(*.ts)", "Write", {"file_path": "src/app.py", "content": ""}, False),
        ("Read", "Grep", {"pattern": "x"}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.com/a", "prompt": "p"}, True),
        ("mcp__files__*", "mcp__files__read", {}, True),
        ("Task(reviewer)", "Task", {"subagent_type": "reviewer"}, True),
        ("Task(reviewer)", "Task", {"subagent_type": "writer"}, False),
    ],
)
def test_if_rules_match_like_permission_rules(
    tmp_path: Path, rule: str, tool: str, arguments: dict[str, object], expected: bool
) -> None:
    assert condition_matches(parse_rule(rule), tool, arguments, cwd=tmp_path, home=tmp_path) is expected
