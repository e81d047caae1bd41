"""The OS sandbox for Bash (bubblewrap on Linux) and the network proxy it reaches the outside through."""

from __future__ import annotations

from .config import SandboxConfig, SandboxConfigError, parse_sandbox_config, sandbox_block
from .platform import ProbeStop, ProbeStopped
from .runtime import SANDBOX_MODES, Placement, RunSandbox, SandboxMode, SandboxRuntime

__all__ = [
    "SANDBOX_MODES",
    "Placement",
    "ProbeStop",
    "ProbeStopped",
    "RunSandbox",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxMode",
    "SandboxRuntime",
    "parse_sandbox_config",
    "sandbox_block",
]
