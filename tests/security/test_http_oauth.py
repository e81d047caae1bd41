"""OAuth 2.1 resource server against a local issuer: only tokens this issuer signed for this server get in."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import httpx2
import pytest

from mcp_subagents.models.scripted import ScriptedModel, text
from mcp_subagents.serve.oauth import UNKNOWN_KEY_REFETCHES_PER_MINUTE

from ..support import MODES, text_of
from .http_harness import ALICE_TOKEN, BACKGROUND_TASK, TRANSPORTS, http_settings, mcp_client, raw_request, serving
from .http_harness import token_file as make_token_file
from .oauth_issuer import Issuer, new_key, public_pem, running_issuer, unsigned_token

pytestmark = pytest.mark.anyio


def authorized(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_access_token_from_the_issuer_gets_in(tmp_path: Path, transport: str, mode: str) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(tmp_path, transport, oauth_issuer=issuer.url)
        async with serving(settings) as served:
            token = issuer.token(audience=served.url)
            async with mcp_client(served.url, token=token, mode=mode) as client:
                tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]


async def test_the_401_points_to_protected_resource_metadata(tmp_path: Path) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(tmp_path, "streamable-http", oauth_issuer=issuer.url, oauth_scopes=("mcp:tools",))
        async with serving(settings) as served:
            refused = await raw_request(served.url)
            metadata_url = refused.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0]
            async with httpx2.AsyncClient() as http:
                metadata = (await http.get(metadata_url)).json()
                bare = (await http.get(f"{served.origin}/.well-known/oauth-protected-resource")).json()
    assert refused.status_code == 401
    assert metadata_url == f"{served.origin}/.well-known/oauth-protected-resource/mcp"
    assert metadata["resource"] == served.url
    assert metadata["authorization_servers"] == [issuer.url]
    assert metadata["scopes_supported"] == ["mcp:tools"]
    assert metadata["bearer_methods_supported"] == ["header"]
    assert bare == metadata


async def test_forged_and_misdirected_tokens_are_refused(tmp_path: Path) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(tmp_path, "streamable-http", oauth_issuer=issuer.url)
        async with serving(settings) as served:
            audience = served.url
            now = int(time.time())
            claims = {"iss": issuer.url, "aud": audience, "sub": "mallory", "exp": now + 300}
            impostor = Issuer(url=issuer.url, keys={"key-1": new_key()})  # same issuer name and key id, other key
            forged = {
                "for another service": issuer.token(audience="https://other.example/mcp"),
                "from another issuer": issuer.token(audience=audience, iss="https://evil.example"),
                "expired": issuer.token(audience=audience, exp=now - 120, iat=now - 600),
                "not yet valid": issuer.token(audience=audience, nbf=now + 600),
                "without expiry": issuer.token(audience=audience, exp=None),
                "without subject or client": issuer.token(audience=audience, subject=None),
                "signed by another key": impostor.token(audience=audience),
                "unknown key id": Issuer(url=issuer.url, keys={"key-9": new_key()}).token(
                    audience=audience, kid="key-9"
                ),
                "alg none": unsigned_token({"alg": "none", "typ": "JWT"}, claims),
                "HS256 keyed with the public key": unsigned_token(
                    {"alg": "HS256", "kid": "key-1", "typ": "JWT"}, claims, secret=public_pem(issuer.keys["key-1"])
                ),
                "tampered claims": _tampered(issuer.token(audience=audience, subject="mallory"), "mallory", "alice00"),
            }
            answers = {
                name: (await raw_request(served.url, headers=authorized(token))).status_code
                for name, token in forged.items()
            }
            genuine = await raw_request(served.url, headers=authorized(issuer.token(audience=audience)))
    assert answers == dict.fromkeys(forged, 401)
    assert genuine.status_code == 200


def _tampered(token: str, old: str, new: str) -> str:
    header, payload, signature = token.split(".")
    decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    assert old.encode() in decoded
    decoded = decoded.replace(old.encode(), new.encode())
    return f"{header}.{base64.urlsafe_b64encode(decoded).rstrip(b'=').decode()}.{signature}"


async def test_required_scopes_answer_403_and_token_file_tokens_still_work(tmp_path: Path) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(
            tmp_path,
            "streamable-http",
            oauth_issuer=issuer.url,
            oauth_scopes=("mcp:tools",),
            auth_token_file=make_token_file(tmp_path, alice=ALICE_TOKEN),
        )
        async with serving(settings) as served:
            without = await raw_request(served.url, headers=authorized(issuer.token(audience=served.url, scope="x")))
            scoped = issuer.token(audience=served.url, scope="openid mcp:tools")
            listed = issuer.token(audience=served.url, scp=["mcp:tools"])
            with_scope = await raw_request(served.url, headers=authorized(scoped))
            with_scp = await raw_request(served.url, headers=authorized(listed))
            static = await raw_request(served.url, headers=authorized(ALICE_TOKEN))
    assert without.status_code == 403 and 'error="insufficient_scope"' in without.headers["www-authenticate"]
    assert with_scope.status_code == 200 and with_scp.status_code == 200
    assert static.status_code == 200


async def test_an_oauth_subject_never_shares_tasks_with_a_token_file_principal_of_the_same_name(
    tmp_path: Path,
) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(
            tmp_path,
            "streamable-http",
            oauth_issuer=issuer.url,
            auth_token_file=make_token_file(tmp_path, alice=ALICE_TOKEN),
        )
        async with serving(settings, model=ScriptedModel([text("token-file alice's result")])) as served:
            async with mcp_client(served.url, token=ALICE_TOKEN) as file_alice:
                launched = text_of(await file_alice.call_tool("Task", BACKGROUND_TASK))
                task_id = launched.split("task_id: ")[1].split()[0]
                await file_alice.call_tool("TaskOutput", {"task_id": task_id})
            oauth_alice = issuer.token(audience=served.url, subject="alice")
            async with mcp_client(served.url, token=oauth_alice) as client:
                seen = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert seen == f"No task found with ID: {task_id}"


async def test_a_rotated_key_is_fetched_but_unknown_key_ids_do_not_hammer_the_issuer(tmp_path: Path) -> None:
    async with running_issuer() as issuer:
        settings = http_settings(tmp_path, "streamable-http", oauth_issuer=issuer.url)
        async with serving(settings) as served:
            first = await raw_request(served.url, headers=authorized(issuer.token(audience=served.url)))
            issuer.keys["key-2"] = new_key()
            rotated = await raw_request(served.url, headers=authorized(issuer.token(audience=served.url, kid="key-2")))
            stranger = Issuer(url=issuer.url, keys={"key-x": new_key()})
            for _ in range(10):
                junk = stranger.token(audience=served.url, kid="key-x")
                assert (await raw_request(served.url, headers=authorized(junk))).status_code == 401
    assert first.status_code == 200 and rotated.status_code == 200
    assert issuer.jwks_fetches == 1 + UNKNOWN_KEY_REFETCHES_PER_MINUTE  # the first fetch, then the rate limit
