"""Attacks on what the server itself keeps: its team token file and TLS key read from sandboxed Bash, and a server
started in the home directory whose sandbox then made the whole home writable.

Before the fix, `cat` of the `--auth-token-file` printed every person's token from a sandboxed command (the TLS key
sat the same way), and a server started in `~` without `--cwd` or roots let a sandboxed command write in every
other project of the home.
Checked to succeed against 74f4b0f.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.environment import scrubbed_environment
from mcp_subagents.core.errors import ToolError
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from mcp_subagents.sandbox import SandboxRuntime, parse_sandbox_config
from mcp_subagents.tools import ToolContext, builtin_tools
from tests.security.http_harness import ALICE_TOKEN, BOB_TOKEN, token_file
from tests.support import connected, make_settings, text_of

from .conftest import requires_bwrap

pytestmark = [pytest.mark.anyio, requires_bwrap]


async def test_the_team_token_file_and_tls_key_are_hidden_from_sandboxed_commands(host_tmp: Path) -> None:
    secrets = host_tmp / "secrets"
    secrets.mkdir()
    tokens = token_file(secrets, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    key = secrets / "server.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\nTLSKEYSECRET\n")
    key.with_name("server.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    work = host_tmp / "work"
    work.mkdir()
    # The runtime reads the flags whatever the transport: an in-memory client is enough to drive a Task.
    settings = replace(
        make_settings(host_tmp),
        cwd=work,
        sandbox="on",
        auth_token_file=tokens,
        tls_key=key,
        tls_cert=key.with_name("server.crt"),
        permission_mode="bypassPermissions",
    )
    model = ScriptedModel(
        [tool_call("Bash", {"command": f"cat {tokens} {key}; grep -r SECRET {secrets}; true"}), text("done")]
    )
    task = {"description": "read", "prompt": "Read the tokens.", "subagent_type": "general-purpose"}
    async with connected(settings, model=model) as client:
        with anyio.fail_after(60):
            body = text_of(await client.call_tool("Task", task))
    seen = str(model.requests[-1])
    assert "done" in body
    assert ALICE_TOKEN not in seen and BOB_TOKEN not in seen and "TLSKEYSECRET" not in seen
    assert "the server's own secrets" in seen


@pytest.mark.parametrize("where", ["home", "above home"])
async def test_a_server_started_in_the_home_directory_keeps_it_read_only(host_tmp: Path, where: str) -> None:
    home = host_tmp / "home"
    home.mkdir()
    (home / "other-project").mkdir()
    (home / "other-project" / "notes.txt").write_text("# mine\n")
    cwd = home if where == "home" else host_tmp
    runtime = SandboxRuntime(parse_sandbox_config(None), state_dir=home / "state", home=home)
    sandbox = runtime.for_run(cwd=cwd, roots=(cwd,))
    assert sandbox is not None
    env = scrubbed_environment(os.environ) | {"HOME": str(home)}
    bash = builtin_tools()["Bash"]
    ctx = ToolContext(cwd=cwd, allowed_roots=(cwd,), env=env, sandbox=sandbox)
    try:
        with anyio.fail_after(30):
            result = await bash.run(ctx, bash.validate({"command": "echo planted >> ~/other-project/notes.txt"}))
    except ToolError as exc:
        result = exc.message
    finally:
        sandbox.close()
        runtime.close()
    assert (home / "other-project" / "notes.txt").read_text() == "# mine\n"
    assert "Read-only file system" in result
