"""Tokens never reach the logs, not even at DEBUG level, whether they are accepted or refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import server_environment, text_of

from .http_harness import ALICE_TOKEN, TRANSPORTS, mcp_client, raw_request, server_process, token_file
from .oauth_issuer import running_issuer

pytestmark = pytest.mark.anyio

ENV_TOKEN = "env-token-0123456789abcdefghij"
WRONG_TOKEN = "wrong-token-0123456789abcdefgh"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_no_token_appears_in_the_debug_log(tmp_path: Path, transport: str) -> None:
    environ = server_environment(
        tmp_path, work=tmp_path / "work", MCP_SUBAGENTS_AUTH_TOKEN=ENV_TOKEN, MCP_SUBAGENTS_LOG_LEVEL="DEBUG"
    )
    async with running_issuer() as issuer:
        args = ["--transport", transport, "--auth-token-file", str(token_file(tmp_path, alice=ALICE_TOKEN))]
        args += ["--oauth-issuer", issuer.url]
        async with server_process(args, environ) as server:
            oauth_token = issuer.token(audience=server.url)
            misdirected = issuer.token(audience="https://elsewhere.example/mcp")
            async with mcp_client(server.url, token=ALICE_TOKEN, mode="legacy") as client:
                task = {"description": "d", "prompt": "p", "subagent_type": "Explore"}
                answer = text_of(await client.call_tool("Task", task))
            statuses: list[int] = []
            for token in (ENV_TOKEN, oauth_token, misdirected, WRONG_TOKEN):
                method = "GET" if transport == "sse" else "POST"
                statuses.append(
                    (await raw_request(server.url, method, headers={"Authorization": f"Bearer {token}"})).status_code
                )
        log = "".join(server.stderr)
    assert "No model provider is configured" in answer
    assert statuses == [200, 200, 401, 401]
    assert "DEBUG" in log and "OAuth token refused" in log  # the log did record the refusals, by reason
    for secret in (ALICE_TOKEN, ENV_TOKEN, WRONG_TOKEN, *oauth_token.split("."), *misdirected.split(".")[1:]):
        assert secret not in log


def test_a_token_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = token_file(tmp_path, alice=ALICE_TOKEN)
    path.chmod(0o644)
    result = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "serve", "--transport", "sse", "--auth-token-file", str(path)],
        capture_output=True,
        text=True,
        env=server_environment(tmp_path),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"chmod 600 {path}" in result.stderr and ALICE_TOKEN not in result.stderr
