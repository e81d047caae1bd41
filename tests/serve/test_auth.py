"""The token file, the one-token variable, and the verifier's matching."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.core.principals import LOCAL_PRINCIPAL
from mcp_subagents.mcp.caller import PrincipalToken, principal_of
from mcp_subagents.serve.auth import (
    MIN_TOKEN_LENGTH,
    StaticTokenVerifier,
    env_token,
    parse_tokens,
    read_token_file,
)

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
BARE = "bare-token-0123456789ab"


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


async def test_lines_comments_and_a_bare_token(tmp_path: Path) -> None:
    path = write(tmp_path / "tokens", f"# the team\n\nalice:{ALICE}\n  bob : {BOB}  \n{BARE}\n")
    verifier = StaticTokenVerifier(path)
    assert verifier.match(ALICE) == "token:alice"
    assert verifier.match(BOB) == "token:bob"
    assert verifier.match(BARE) == "token:default"
    assert verifier.match("x" * 30) is None
    access = await verifier.verify_token(ALICE)
    assert isinstance(access, PrincipalToken) and access.principal == "token:alice"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o660])
def test_a_file_others_can_read_or_change_is_refused(tmp_path: Path, mode: int) -> None:
    path = write(tmp_path / "tokens", f"alice:{ALICE}\n", mode)
    with pytest.raises(ConfigError) as refused:
        read_token_file(path)
    assert f"run: chmod 600 {path}" in refused.value.message and ALICE not in refused.value.message


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (f"al ice:{ALICE}\n", "line 1: a principal name"),
        (f"alice:{ALICE}\nbob:short\n", f"line 2: the token is shorter than {MIN_TOKEN_LENGTH}"),
        ("alice:tok en-0123456789abcdef\n", "line 1: the token has characters"),
        ("alice:\n", "line 1: the token has characters"),
        (f"alice:{ALICE}\nbob:{ALICE}\n", "line 2: the same token as line 1"),
        ("# nobody yet\n", "has no tokens"),
    ],
)
def test_a_bad_line_is_named_without_its_token(tmp_path: Path, content: str, complaint: str) -> None:
    with pytest.raises(ConfigError) as refused:
        read_token_file(write(tmp_path / "tokens", content))
    assert complaint in refused.value.message
    assert ALICE not in refused.value.message


def test_a_missing_or_binary_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        read_token_file(tmp_path / "absent")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe alice")
    binary.chmod(0o600)
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_token_file(binary)


def test_the_environment_token() -> None:
    assert env_token({}) == ()
    assert [entry.principal for entry in env_token({"MCP_SUBAGENTS_AUTH_TOKEN": f" {BARE} "})] == ["token:default"]
    with pytest.raises(ConfigError, match="MCP_SUBAGENTS_AUTH_TOKEN: the token is shorter"):
        env_token({"MCP_SUBAGENTS_AUTH_TOKEN": "short"})


def test_parse_keeps_only_digests() -> None:
    entries = parse_tokens([f"alice:{ALICE}"], origin="test")
    assert ALICE.encode() not in repr(entries).encode() and ALICE not in repr(entries)


def test_principal_of_a_request_without_a_verified_token_is_the_local_user() -> None:
    assert principal_of(None) == LOCAL_PRINCIPAL

    assert principal_of(Request({"type": "http", "headers": []})) == LOCAL_PRINCIPAL
