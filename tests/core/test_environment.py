"""Which variables count as secrets, and what a child process's environment keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.core.environment import looks_secret, scrubbed_environment, secret_values


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ANTHROPIC_API_KEY", "x"),
        ("OPENAI_API_KEY", "x"),
        ("AWS_ACCESS_KEY_ID", "x"),
        ("AWS_SESSION_TOKEN", "x"),
        ("PGPASSWORD", "x"),
        ("MYSQL_PWD", "x"),
        ("GITHUB_PAT", "x"),
        ("SENTRY_DSN", "x"),
        ("SECRET_KEY_BASE", "x"),
        ("db_password", "x"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
        ("SOME_APIKEY_HERE", "x"),
        ("DATABASE_URL", "postgres://app:pw@db/app"),
        ("UPSTREAM", "https://user:p%40ss@proxy:3128"),
        ("WHATEVER", "ghp_0123456789abcdefghijABCDEFGHIJ0123"),
        ("WHATEVER", "sk-ant-api03-abcdef"),
        ("WHATEVER", "AKIAABCDEFGHIJKLMNOP"),
        ("ANTHROPIC_CUSTOM_HEADERS", "anthropic-beta: x"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "team=core"),
        ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x"),
        ("ci_extra_header", "x"),
        ("SESSION_COOKIES", "x"),
        ("PROXY_AUTHORIZATION", "x"),
        ("WHATEVER", "Authorization: Bearer abc"),
        ("WHATEVER", "team=core,authorization=Basic%20abc"),
        ("WHATEVER", "X-Api-Key: abc"),
        ("WHATEVER", "Cookie: sid=abc"),
        ("WHATEVER", "Bearer eyJhbGciOiJIUzI1NiJ9"),
    ],
)
def test_secrets_are_recognised_by_name_or_by_value(name: str, value: str) -> None:
    assert looks_secret(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PATH", "/usr/bin"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("KEYBOARD_LAYOUT", "us"),
        ("PWD", "/work"),
        ("SSH_AUTH_SOCK", "/run/user/1000/ssh"),
        ("HTTP_PROXY", "http://proxy:3128"),
        ("DATABASE_HOST", "db.internal"),
        ("GIT_AUTHOR_NAME", "sk"),
        ("LS_COLORS", "rs=0:di=01;34:ln=01;36"),
        ("HEADLESS", "1"),
        ("GREETING", "a bearer of good news"),
    ],
)
def test_ordinary_variables_are_not_secrets(name: str, value: str) -> None:
    assert not looks_secret(name, value)


def test_the_environment_keeps_named_ones_and_drops_denied_ones() -> None:
    base = {"PATH": "/bin", "GH_TOKEN": "t0123456789", "CORP": "internal", "AWS_SECRET_ACCESS_KEY": "s"}
    assert scrubbed_environment(base, keep=["GH_TOKEN"], remove=["CORP"]) == {"PATH": "/bin", "GH_TOKEN": "t0123456789"}
    assert scrubbed_environment(base) == {"PATH": "/bin", "CORP": "internal"}


def test_secret_values_include_the_password_inside_a_url_and_skip_short_ones() -> None:
    values = secret_values({"DATABASE_URL": "postgres://app:hunter2%21long@db/app", "X_TOKEN": "short", "PATH": "/b"})
    assert "postgres://app:hunter2%21long@db/app" in values
    assert "hunter2%21long" in values and "hunter2!long" in values
    assert "short" not in values and "/b" not in values


def test_each_run_gets_its_own_copy_of_the_tool_environment(tmp_path: Path) -> None:
    # The scrubbed environment is worked out once per server; what one run adds to its copy (a hook's variables,
    # a worktree's) must not reach the next run's Bash.
    from mcp_subagents.runtime.service import Subagents
    from tests.support import make_settings

    app = Subagents(make_settings(tmp_path), environ={"PATH": "/usr/bin", "GITHUB_TOKEN": "ghp_x", "LANG": "C"})
    first = app.tool_environment()
    assert first == {"PATH": "/usr/bin", "LANG": "C"}
    first["CLAUDE_PROJECT_DIR"] = "/somewhere"
    assert app.tool_environment() == {"PATH": "/usr/bin", "LANG": "C"}
