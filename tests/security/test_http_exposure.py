"""No accidental exposure. Before, `--host 0.0.0.0` served everyone without a token and with the Host/Origin
checks off, so a request from anywhere, naming any host, ran Tasks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.serve.http_security import is_loopback
from mcp_subagents.serve.transports import open_listener
from tests.support import server_environment

from .http_harness import ALICE_TOKEN, TRANSPORTS, http_settings, raw_request, serving, token_file

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "agents.example.com"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_binding_beyond_loopback_without_tokens_is_refused(tmp_path: Path, transport: str, host: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_listener(http_settings(tmp_path, transport, host=host), environ={})
    message = refused.value.message
    assert "\n" not in message
    assert "--auth-token-file" in message and "MCP_SUBAGENTS_AUTH_TOKEN" in message and "chmod 600" in message


def test_the_command_line_refusal_is_one_line(tmp_path: Path) -> None:
    environ = server_environment(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "serve", "--transport", "streamable-http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "refusing to serve on 0.0.0.0 without authentication" in result.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com", "localhost.example.com"])
def test_other_addresses_are_not(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_host_and_origin_are_checked_on_a_public_bind(tmp_path: Path, transport: str) -> None:
    settings = http_settings(
        tmp_path,
        transport,
        host="0.0.0.0",
        auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN),
        allowed_hosts=("agents.example.com",),
    )
    authorized = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    method = "GET" if transport == "sse" else "POST"
    async with serving(settings) as served:
        url = served.url.replace("0.0.0.0", "127.0.0.1")
        rebound = await raw_request(url, method, headers={**authorized, "Host": "attacker.example"})
        foreign_page = await raw_request(
            url, method, headers={**authorized, "Host": "agents.example.com", "Origin": "http://attacker.example"}
        )
        named = await raw_request(url, method, headers={**authorized, "Host": "agents.example.com"})
        from_its_page = await raw_request(
            url,
            method,
            headers={**authorized, "Host": "agents.example.com:443", "Origin": "https://agents.example.com"},
        )
        unnamed_without_token = await raw_request(url, method, headers={"Host": "attacker.example"})
    assert rebound.status_code == 421
    assert foreign_page.status_code == 403
    assert named.status_code == 200
    assert from_its_page.status_code == 200
    assert unnamed_without_token.status_code == 421  # the Host check comes first: nothing is learned about tokens


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_rebound_browser_page_cannot_reach_a_tokenless_loopback_server(tmp_path: Path, transport: str) -> None:
    method = "GET" if transport == "sse" else "POST"
    async with serving(http_settings(tmp_path, transport)) as served:
        rebound = await raw_request(served.url, method, headers={"Host": f"rebound.attacker.example:{served.port}"})
        foreign_origin = await raw_request(served.url, method, headers={"Origin": "http://attacker.example"})
        local = await raw_request(served.url, method)
    assert rebound.status_code == 421
    assert foreign_origin.status_code == 403
    assert local.status_code == 200


async def test_behind_a_proxy_the_public_url_names_the_host_to_answer(tmp_path: Path) -> None:
    settings = http_settings(
        tmp_path,
        "streamable-http",
        auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN),
        public_url="https://agents.example.com/mcp",
    )
    authorized = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    async with serving(settings) as served:
        forwarded = await raw_request(served.url, headers={**authorized, "Host": "agents.example.com"})
        other = await raw_request(served.url, headers={**authorized, "Host": "agents.example.org"})
    assert forwarded.status_code == 200
    assert other.status_code == 421


@pytest.mark.parametrize("where", ["work", "work/.config", "shared"])
def test_a_token_file_where_subagents_could_read_it_is_refused(tmp_path: Path, where: str) -> None:
    folder = tmp_path / where
    folder.mkdir(parents=True, exist_ok=True)
    settings = http_settings(
        tmp_path,
        "streamable-http",
        auth_token_file=token_file(folder, alice=ALICE_TOKEN),
        allowed_roots=(tmp_path / "shared",),
    )
    with pytest.raises(ConfigError) as refused:  # else alice's subagent could Read bob's token
        open_listener(settings, environ={})
    assert "where subagents can read it" in refused.value.message
