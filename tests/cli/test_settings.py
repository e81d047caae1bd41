from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mcp_subagents.cli.arguments import ALL_OPTIONS, parser_for
from mcp_subagents.config.settings import Settings, add_options, settings_from
from mcp_subagents.core.errors import ConfigError


def parse(argv: list[str], environ: dict[str, str]) -> Settings:
    parser = argparse.ArgumentParser()
    add_options(parser, ALL_OPTIONS)
    return settings_from(parser.parse_args(argv), ALL_OPTIONS, environ)


def test_defaults_need_no_flags(tmp_path: Path) -> None:
    settings = parse([], {"HOME": str(tmp_path)})
    assert (settings.transport, settings.host, settings.port, settings.model) == ("stdio", "127.0.0.1", 8000, "sonnet")
    assert settings.state_dir == tmp_path / ".local" / "state" / "mcp-subagents"
    assert settings.user_agents_dir == tmp_path / ".claude" / "agents"
    assert settings.foreground_deadline == 45 and settings.max_concurrent == 10


def test_every_flag_has_an_environment_variable(tmp_path: Path) -> None:
    envs = {option.env for option in ALL_OPTIONS}
    for name in (
        "TRANSPORT",
        "HOST",
        "PORT",
        "CWD",
        "AGENTS_DIR",
        "PLUGIN_DIR",
        "AGENTS",
        "SETTINGS",
        "MODEL",
        "STATE_DIR",
        "PROVIDER",
        "MAX_RESULT_CHARS",
    ):
        assert f"MCP_SUBAGENTS_{name}" in envs
    settings = parse(
        [],
        {
            "HOME": str(tmp_path),
            "MCP_SUBAGENTS_TRANSPORT": "sse",
            "MCP_SUBAGENTS_PORT": "9001",
            "MCP_SUBAGENTS_CWD": str(tmp_path),
            "MCP_SUBAGENTS_AGENTS_DIR": f"{tmp_path}/a:{tmp_path}/b",
            "MCP_SUBAGENTS_MODEL": "opus",
        },
    )
    assert (settings.transport, settings.port, settings.cwd, settings.model) == (
        "sse",
        9001,
        tmp_path.resolve(),
        "opus",
    )
    assert settings.agents_dirs == (tmp_path / "a", tmp_path / "b")


def test_flags_win_over_environment(tmp_path: Path) -> None:
    settings = parse(
        ["--model", "haiku", "--agents-dir", "x", "--agents-dir", "y"],
        {"HOME": str(tmp_path), "MCP_SUBAGENTS_MODEL": "opus", "MCP_SUBAGENTS_AGENTS_DIR": "z"},
    )
    assert settings.model == "haiku"
    assert settings.agents_dirs == (Path("x"), Path("y"))


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"MCP_SUBAGENTS_PORT": "http"}, "MCP_SUBAGENTS_PORT: must be a port number from 0 to 65535"),
        ({"MCP_SUBAGENTS_TRANSPORT": "carrier-pigeon"}, "must be one of stdio, http, streamable-http, sse"),
        ({"MCP_SUBAGENTS_TASK_TIMEOUT": "nan"}, "must be a positive number of seconds, got 'nan'"),
        ({"MCP_SUBAGENTS_CWD": "/definitely/not/here"}, "is not a directory"),
    ],
)
def test_bad_values_name_the_setting(environ: dict[str, str], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        parse([], {"HOME": "/tmp", **environ})


@pytest.mark.parametrize("given", [["--transport", "http"], ["--transport=http"], []])
def test_http_is_a_name_for_streamable_http_as_claude_code_and_the_inspector_say(
    given: list[str], tmp_path: Path
) -> None:
    """`"type": "http"` in Claude Code's .mcp.json, "Streamable HTTP" / `http` in the MCP Inspector."""
    settings = parse(given, {"HOME": str(tmp_path), "MCP_SUBAGENTS_TRANSPORT": "http"})
    assert settings.transport == "streamable-http"


def test_team_serving_flags(tmp_path: Path) -> None:
    settings = parse(
        [
            "--auth-token-file",
            "~/tokens",
            "--allowed-host",
            "Agents.Example.com",
            "--allowed-host",
            "agents.internal:8443",
            "--allowed-root",
            str(tmp_path),
            "--trust-client-roots",
            "--oauth-issuer",
            "https://login.example.com/realms/team",
            "--oauth-scope",
            "mcp:tools",
            "--public-url",
            "https://agents.example.com/mcp",
        ],
        {"HOME": str(tmp_path)},
    )
    assert settings.auth_token_file == Path("~/tokens").expanduser()
    assert settings.allowed_hosts == ("agents.example.com", "agents.internal:8443")
    assert settings.allowed_roots == (tmp_path,)
    assert settings.trust_client_roots is True
    assert settings.oauth_issuer == "https://login.example.com/realms/team"
    assert settings.oauth_scopes == ("mcp:tools",)
    assert settings.public_url == "https://agents.example.com/mcp"


def test_team_serving_variables_split_hosts_and_scopes_on_commas(tmp_path: Path) -> None:
    settings = parse(
        [],
        {
            "HOME": str(tmp_path),
            "MCP_SUBAGENTS_ALLOWED_HOST": "a.example.com, b.example.com:8443",
            "MCP_SUBAGENTS_OAUTH_SCOPE": "mcp:tools,mcp:admin",
            "MCP_SUBAGENTS_TRUST_CLIENT_ROOTS": "yes",
        },
    )
    assert settings.allowed_hosts == ("a.example.com", "b.example.com:8443")
    assert settings.oauth_scopes == ("mcp:tools", "mcp:admin")
    assert settings.trust_client_roots is True
    assert parse([], {"HOME": str(tmp_path), "MCP_SUBAGENTS_TRUST_CLIENT_ROOTS": "0"}).trust_client_roots is False


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--allowed-host", "https://agents.example.com"], "--allowed-host: must be a host name"),
        (["--oauth-issuer", "login.example.com"], "--oauth-issuer: must be an http(s) URL"),
        (["--public-url", "ftp://x"], "--public-url: must be an http(s) URL"),
    ],
)
def test_team_serving_values_are_checked(tmp_path: Path, argv: list[str], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        parse(argv, {"HOME": str(tmp_path)})
    with pytest.raises(ConfigError, match="MCP_SUBAGENTS_TRUST_CLIENT_ROOTS: must be"):
        parse([], {"HOME": str(tmp_path), "MCP_SUBAGENTS_TRUST_CLIENT_ROOTS": "maybe"})


def test_model_request_limits_and_the_claude_folder(tmp_path: Path) -> None:
    defaults = parse([], {"HOME": str(tmp_path)})
    assert (defaults.max_tokens, defaults.compact_threshold, defaults.max_retries) == (None, None, 10)
    assert defaults.claude_dir == tmp_path / ".claude"
    settings = parse(
        ["--max-tokens", "4096", "--compact-threshold", "150000"],
        {"HOME": str(tmp_path), "MCP_SUBAGENTS_MAX_RETRIES": "0", "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")},
    )
    assert (settings.max_tokens, settings.compact_threshold, settings.max_retries) == (4096, 150_000, 0)
    assert settings.claude_dir == tmp_path / "cc"
    with pytest.raises(ConfigError, match="--compact-threshold"):
        parse(["--compact-threshold", "0"], {"HOME": str(tmp_path)})


def test_main_model_comes_from_its_flag_or_variable_and_anthropic_model_is_kept_beside_it() -> None:
    by_flag = parse(["--main-model", "opus"], {"ANTHROPIC_MODEL": " haiku "})
    by_variable = parse([], {"MCP_SUBAGENTS_MAIN_MODEL": "fable"})
    assert (by_flag.main_model, by_flag.anthropic_model) == ("opus", "haiku")
    assert (by_variable.main_model, by_variable.anthropic_model) == ("fable", None)


def test_a_commands_parser_is_built_once_and_parses_each_command_line_afresh() -> None:
    """The warm server builds the `serve` parser before it forks; each forked server parses its own command line."""
    with_flag = ["serve", "--max-concurrent", "3"]
    first = parser_for(with_flag).parse_args(with_flag)
    again = parser_for(["serve"]).parse_args(["serve"])
    assert parser_for(["serve"]) is parser_for(with_flag)
    assert first.max_concurrent == "3" and again.max_concurrent is None
    assert parser_for(["tasks", "list"]) is not parser_for(["serve"])
