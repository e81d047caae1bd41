"""Bearer tokens on both HTTP transports: before, any request from anyone was served."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.models.scripted import ScriptedModel, text

from ..support import MODES, text_of
from .http_harness import (
    ALICE_TOKEN,
    BOB_TOKEN,
    TRANSPORTS,
    http_settings,
    mcp_client,
    raw_request,
    serving,
    token_file,
)

pytestmark = pytest.mark.anyio

WRONG_AUTHORIZATIONS = [
    None,
    "Bearer",
    "Bearer not-the-token-0123456789",
    f"Bearer {ALICE_TOKEN[:-1]}",
    f"Bearer {ALICE_TOKEN}x",
    f"Bearer {ALICE_TOKEN.upper()}",
    f"Basic {ALICE_TOKEN}",
    ALICE_TOKEN,
]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_endpoint_answers_401_without_a_valid_token(tmp_path: Path, transport: str) -> None:
    settings = http_settings(tmp_path, transport, auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN))
    async with serving(settings) as served:
        endpoints = [(served.url, "POST"), (served.url, "GET"), (served.url, "DELETE")]
        if transport == "sse":
            endpoints = [(served.url, "GET"), (f"{served.origin}/messages/?session_id=0", "POST")]
        for url, method in endpoints:
            for authorization in WRONG_AUTHORIZATIONS:
                headers = {"Authorization": authorization} if authorization is not None else {}
                response = await raw_request(url, method, headers=headers)
                assert response.status_code == 401, (url, method, authorization)
                challenge = response.headers["www-authenticate"]
                assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_valid_token_gets_the_whole_protocol(tmp_path: Path, transport: str, mode: str) -> None:
    settings = http_settings(tmp_path, transport, auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN))
    model = ScriptedModel([text("Here is a folder.")])
    async with serving(settings, model=model) as served, mcp_client(served.url, token=ALICE_TOKEN, mode=mode) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("Task", {"description": "d", "prompt": "p", "subagent_type": "Explore"})
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
    assert "Here is a folder." in text_of(result) and not result.is_error


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_client_library_is_refused_with_a_wrong_token(tmp_path: Path, transport: str, mode: str) -> None:
    settings = http_settings(tmp_path, transport, auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN))
    async with serving(settings) as served:
        with pytest.raises(Exception):  # noqa: B017 - each transport reports the 401 its own way
            async with mcp_client(served.url, token=BOB_TOKEN, mode=mode) as client:
                await client.list_tools()


async def test_the_environment_token_belongs_to_the_principal_default(tmp_path: Path) -> None:
    settings = http_settings(tmp_path, "streamable-http")
    environ = {"MCP_SUBAGENTS_AUTH_TOKEN": BOB_TOKEN}
    async with serving(settings, environ=environ) as served:
        refused = await raw_request(served.url)
        async with mcp_client(served.url, token=BOB_TOKEN) as client:
            tools = (await client.list_tools()).tools
    assert refused.status_code == 401
    assert len(tools) == 3


async def test_a_person_added_to_the_token_file_gets_in_without_a_restart(tmp_path: Path) -> None:
    path = token_file(tmp_path, alice=ALICE_TOKEN)
    settings = http_settings(tmp_path, "streamable-http", auth_token_file=path)
    async with serving(settings) as served:
        before = await raw_request(served.url, headers={"Authorization": f"Bearer {BOB_TOKEN}"})
        path.write_text(f"alice:{ALICE_TOKEN}\nbob:{BOB_TOKEN}\n", encoding="utf-8")
        after = await raw_request(served.url, headers={"Authorization": f"Bearer {BOB_TOKEN}"})
        path.chmod(0o644)  # a broken edit: the server keeps the tokens it has rather than locking everyone out
        path.write_text("garbage\n", encoding="utf-8")
        still = await raw_request(served.url, headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
    assert before.status_code == 401
    assert after.status_code == 200
    assert still.status_code == 200
