"""Claude Code's `sandbox` settings block, parsed as this server reads it."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.runtime.service import Subagents
from mcp_subagents.sandbox import SandboxConfig, SandboxConfigError, parse_sandbox_config, sandbox_block
from mcp_subagents.sandbox.domains import DomainRules
from tests.support import make_settings


def test_no_block_gives_claude_codes_defaults() -> None:
    config = parse_sandbox_config(None)
    assert config == parse_sandbox_config({}) == SandboxConfig()
    assert config.enabled is None  # the server's --sandbox mode decides
    assert not config.auto_allow_bash_if_sandboxed  # as in Claude Code: sandboxed commands still ask
    assert config.allow_unsandboxed_commands
    assert not config.fail_if_unavailable and not config.network.allowed_domains


def test_a_full_block_is_read_field_by_field() -> None:
    config = parse_sandbox_config(
        {
            "enabled": True,
            "autoAllowBashIfSandboxed": True,
            "allowUnsandboxedCommands": False,
            "excludedCommands": ["docker", "git push *"],
            "failIfUnavailable": True,
            "network": {
                "allowedDomains": ["pypi.org", "*.pythonhosted.org", "localhost:8080"],
                "deniedDomains": ["evil.pypi.org"],
                "allowLocalBinding": True,
                "allowUnixSockets": ["/run/docker.sock"],
                "allowAllUnixSockets": False,
            },
            "filesystem": {"allowWrite": ["~/.cache/pip"], "denyWrite": ["./dist"], "denyRead": "~/.kube"},
            "credentials": {
                "envVars": [{"name": "STRIPE_KEY", "mode": "deny"}, {"name": "SESSION", "mode": "mask"}],
                "files": [{"path": "~/.pgpass", "mode": "deny"}],
                "allowEnvVars": ["GITHUB_TOKEN"],
            },
            "bwrapPath": "/opt/bwrap",
        }
    )
    assert config.enabled is True and config.fail_if_unavailable
    assert config.auto_allow_bash_if_sandboxed and not config.allow_unsandboxed_commands
    assert config.excluded_commands == ("docker", "git push *")
    assert config.network.allowed_domains == ("pypi.org", "*.pythonhosted.org", "localhost:8080")
    assert config.network.denied_domains == ("evil.pypi.org",) and config.network.allow_local_binding
    assert config.filesystem.deny_read == ("~/.kube",)  # a lone string is a one-item list
    assert config.credentials.deny_env_vars == ("STRIPE_KEY", "SESSION")
    assert config.credentials.deny_files == ("~/.pgpass",)
    assert config.credentials.allow_env_vars == ("GITHUB_TOKEN",)
    assert config.bwrap_path == "/opt/bwrap" and config.unused == ()


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ({"enabled": "yes"}, "sandbox.enabled must be true or false, got the string 'yes'"),
        ({"network": []}, "sandbox.network must be an object, got a list"),
        ({"network": {"allowedDomains": [1]}}, "sandbox.network.allowedDomains must be a list of strings"),
        ({"network": {"allowedDomains": ["https://pypi.org/simple"]}}, "'https://pypi.org/simple' is not a host"),
        ({"network": {"allowedDomains": ["pypi.org:http"]}}, "'pypi.org:http' is not a host"),
        ({"filesystem": {"allowWrite": ["ok", ""]}}, "sandbox.filesystem.allowWrite has an empty entry"),
        ({"credentials": {"envVars": [{"mode": "deny"}]}}, "sandbox.credentials.envVars[0].name must be"),
        ({"credentials": {"envVars": [{"name": "X", "mode": "allow"}]}}, 'mode must be "deny" or "mask"'),
        ({"excludedCommands": {"docker": True}}, "sandbox.excludedCommands must be a list of strings"),
    ],
)
def test_bad_values_are_errors_that_name_the_field(block: dict[str, Any], named: str) -> None:
    with pytest.raises(SandboxConfigError, match="invalid sandbox settings") as caught:
        parse_sandbox_config(block)
    assert named in caught.value.message


def test_every_bad_field_is_reported_at_once() -> None:
    with pytest.raises(SandboxConfigError) as caught:
        parse_sandbox_config({"enabled": 1, "failIfUnavailable": "no", "network": {"allowLocalBinding": "x"}})
    message = caught.value.message
    assert "sandbox.enabled" in message and "sandbox.failIfUnavailable" in message
    assert "sandbox.network.allowLocalBinding" in message


def test_keys_this_server_does_not_use_are_reported_not_fatal() -> None:
    config = parse_sandbox_config(
        {"ignoreViolations": {}, "network": {"httpProxyPort": 8080}, "frobnicate": True, "ripgrep": {}}
    )
    assert "sandbox.network.httpProxyPort is not used by this server (commands always use this server's own proxy)" in (
        config.unused
    )
    assert "sandbox.frobnicate is not a sandbox setting this server knows" in config.unused
    assert any(line.startswith("sandbox.ignoreViolations is not used") for line in config.unused)


@pytest.mark.parametrize(
    ("host", "port", "allowed"),
    [
        ("pypi.org", 443, True),
        ("PyPI.org.", 80, True),  # case and the root dot do not matter
        ("files.pythonhosted.org", 443, True),
        ("pythonhosted.org", 443, False),  # *.x is the subdomains of x, not x itself
        ("evil.pypi.org", 443, False),  # deniedDomains win
        ("localhost", 8080, True),
        ("localhost", 8081, False),  # a port in the entry limits it to that port
        ("example.com", 443, False),
    ],
)
def test_domain_rules_follow_allowed_and_denied_domains(host: str, port: int, allowed: bool) -> None:
    rules = DomainRules(["pypi.org", "*.pythonhosted.org", "*.pypi.org", "localhost:8080"], ["evil.pypi.org"])
    verdict = rules.check(host, port)
    assert verdict.allowed is allowed
    if not allowed:
        assert f"network access to {host.lower().rstrip('.')}:{port} is" in verdict.reason


def test_the_settings_files_feed_the_block_and_a_broken_one_falls_back_to_the_defaults(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flagged = tmp_path / "flag.json"
    flagged.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["pypi.org"]}}}))
    settings = make_settings(tmp_path, sandbox="auto", settings_file=flagged)
    assert Subagents(settings, environ={}).sandbox.config.network.allowed_domains == ("pypi.org",)
    assert Subagents(make_settings(tmp_path, sandbox="auto"), environ={}).sandbox.config == SandboxConfig()
    flagged.write_text(json.dumps({"sandbox": {"enabled": "sometimes"}}))
    with caplog.at_level(logging.ERROR):
        assert Subagents(settings, environ={}).sandbox.config == SandboxConfig()
    assert "sandbox.enabled must be true or false" in caplog.text


def test_a_projects_own_settings_only_confine_more_until_it_is_trusted() -> None:
    user = {"sandbox": {"network": {"allowedDomains": ["pypi.org"]}, "filesystem": {"denyRead": ["~/secret"]}}}
    project = {
        "sandbox": {
            "enabled": False,  # would turn it off
            "excludedCommands": ["curl *"],  # would let curl out
            "network": {"allowedDomains": ["*"], "deniedDomains": ["evil.example"]},
            "filesystem": {"allowWrite": ["~"], "denyRead": ["./keys"]},
            "credentials": {"allowEnvVars": ["AWS_SECRET_ACCESS_KEY"]},
            "failIfUnavailable": True,
        }
    }
    layers = [("user", user), ("project", project)]
    untrusted = sandbox_block(layers, project_trusted=False)
    assert untrusted == {
        "network": {"allowedDomains": ["pypi.org"], "deniedDomains": ["evil.example"]},
        "filesystem": {"denyRead": ["~/secret", "./keys"]},
        "failIfUnavailable": True,
    }
    trusted = sandbox_block(layers, project_trusted=True)
    assert trusted["enabled"] is False and trusted["network"]["allowedDomains"] == ["pypi.org", "*"]
    assert trusted["credentials"] == {"allowEnvVars": ["AWS_SECRET_ACCESS_KEY"]}


def test_the_servers_sandbox_follows_the_user_settings_and_not_an_untrusted_repository(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, sandbox="auto")
    assert settings.cwd is not None and settings.user_settings_file is not None
    settings.user_settings_file.parent.mkdir(parents=True)
    settings.user_settings_file.write_text(json.dumps({"sandbox": {"excludedCommands": ["docker *"]}}))
    (settings.cwd / ".claude").mkdir()
    (settings.cwd / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"enabled": False}}))
    config = Subagents(settings, environ={}).sandbox.config
    assert config.excluded_commands == ("docker *",) and config.enabled is None
    trusting = replace(settings, trust_projects=(settings.cwd,))
    assert Subagents(trusting, environ={}).sandbox.config.enabled is False
