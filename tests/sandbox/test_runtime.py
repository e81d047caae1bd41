"""Whether Bash is sandboxed, and where each command runs: the modes, the settings and the escape hatches."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.sandbox import SandboxMode, SandboxRuntime, parse_sandbox_config
from mcp_subagents.sandbox.platform import Availability

WORKS = Availability("/usr/bin/bwrap", "", "/usr/bin/socat")
MISSING = Availability(None, "bubblewrap (bwrap) is not installed")


def runtime(
    tmp_path: Path, block: dict[str, object] | None = None, mode: SandboxMode = "auto", found: Availability = WORKS
) -> SandboxRuntime:
    return SandboxRuntime(
        parse_sandbox_config(block),
        mode,
        state_dir=tmp_path / "state",
        home=tmp_path,
        availability=found,
    )


def test_auto_is_on_wherever_bubblewrap_works(tmp_path: Path) -> None:
    assert runtime(tmp_path).state == "on"
    assert runtime(tmp_path).describe() == "Bash sandbox on (bubblewrap; no network; Unix sockets closed)"


def test_auto_without_bubblewrap_is_off_and_says_why(tmp_path: Path) -> None:
    off = runtime(tmp_path, found=MISSING)
    assert off.state == "off"
    assert off.describe().startswith("Bash sandbox off: bubblewrap (bwrap) is not installed")
    assert off.for_run(cwd=tmp_path, roots=(tmp_path,)) is None


def test_on_without_bubblewrap_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--sandbox on: the sandbox cannot run here: bubblewrap"):
        runtime(tmp_path, mode="on", found=MISSING)


def test_off_and_enabled_false_turn_it_off(tmp_path: Path) -> None:
    assert runtime(tmp_path, mode="off").describe().startswith("Bash sandbox off: turned off with --sandbox off")
    disabled = runtime(tmp_path, {"enabled": False})
    assert disabled.state == "off" and "sandbox.enabled: false" in disabled.reason
    assert runtime(tmp_path, {"enabled": False}, mode="on").state == "on"  # the flag is the operator's word


def test_fail_if_unavailable_refuses_every_command(tmp_path: Path) -> None:
    required = runtime(tmp_path, {"failIfUnavailable": True}, found=MISSING)
    sandbox = required.for_run(cwd=tmp_path, roots=(tmp_path,))
    assert required.state == "required" and sandbox is not None
    refusal = sandbox.placement("ls", leave_requested=False).refusal
    assert refusal is not None and "sandbox.failIfUnavailable" in refusal and "bubblewrap" in refusal
    assert sandbox.placement("ls", leave_requested=True).refusal == refusal


def test_commands_run_sandboxed_unless_they_leave_or_are_excluded(tmp_path: Path) -> None:
    sandbox = runtime(tmp_path, {"excludedCommands": ["docker", "git push *"]}).for_run(cwd=tmp_path, roots=(tmp_path,))
    assert sandbox is not None
    assert sandbox.placement("ls -la", leave_requested=False).sandboxed
    assert not sandbox.placement("ls -la", leave_requested=True).sandboxed
    assert not sandbox.placement("docker  ps", leave_requested=False).sandboxed
    assert not sandbox.placement("docker", leave_requested=False).sandboxed
    assert sandbox.placement("dockerd", leave_requested=False).sandboxed
    assert not sandbox.placement("git push origin main", leave_requested=False).sandboxed
    assert sandbox.placement("git pull", leave_requested=False).sandboxed


def test_leaving_is_refused_outright_when_unsandboxed_commands_are_not_allowed(tmp_path: Path) -> None:
    sandbox = runtime(tmp_path, {"allowUnsandboxedCommands": False}).for_run(cwd=tmp_path, roots=(tmp_path,))
    assert sandbox is not None
    placement = sandbox.placement("curl example.com", leave_requested=True)
    assert not placement.sandboxed
    assert placement.refusal is not None and "sandbox.allowUnsandboxedCommands is false" in placement.refusal
