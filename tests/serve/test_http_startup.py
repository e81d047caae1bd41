"""HTTP start-up problems are one line on stderr and exit 2, and TLS serves HTTPS."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.serve.transports import open_listener
from tests.security.http_harness import ALICE_TOKEN, bearer, http_settings, serving, token_file
from tests.support import server_environment

pytestmark = pytest.mark.anyio


def serve_command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "serve", *args],
        capture_output=True,
        text=True,
        env=server_environment(tmp_path),
        timeout=60,
        check=False,
    )


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve_command(tmp_path, "--transport", "streamable-http", "--port", str(port))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "--port" in result.stderr


def write_certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@pytest.mark.parametrize(
    "problem", ["missing", "not a certificate", "key of another certificate", "no key", "encrypted key"]
)
def test_an_unusable_certificate_is_one_clear_error(tmp_path: Path, problem: str) -> None:
    cert, key = write_certificate(tmp_path)
    settings = http_settings(tmp_path, "streamable-http", tls_cert=cert, tls_key=key)
    match problem:
        case "missing":
            settings = replace(settings, tls_cert=tmp_path / "nowhere.pem")
        case "not a certificate":
            cert.write_text("hello\n", encoding="utf-8")
        case "key of another certificate":
            other = tmp_path / "other"
            other.mkdir()
            settings = replace(settings, tls_key=write_certificate(other)[1])
        case "encrypted key":  # would prompt for a password on the terminal if we let OpenSSL ask
            private = serialization.load_pem_private_key(key.read_bytes(), password=None)
            key.write_bytes(
                private.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.BestAvailableEncryption(b"secret"),
                )
            )
        case _:
            settings = replace(settings, tls_key=None)
    with pytest.raises(ConfigError) as refused:
        open_listener(settings, environ={})
    assert "\n" not in refused.value.message and "--tls" in refused.value.message


def test_an_unreadable_certificate_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    _, key = write_certificate(tmp_path)
    result = serve_command(
        tmp_path, "--transport", "sse", "--tls-cert", str(tmp_path / "gone.pem"), "--tls-key", str(key)
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "gone.pem" in result.stderr


async def test_tls_serves_https(tmp_path: Path) -> None:
    cert, key = write_certificate(tmp_path)
    settings = http_settings(
        tmp_path, "streamable-http", tls_cert=cert, tls_key=key, auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN)
    )
    trust = ssl.create_default_context(cafile=str(cert))
    async with serving(settings) as served:
        assert served.url.startswith("https://127.0.0.1:")
        async with httpx2.AsyncClient(verify=trust, headers=bearer(ALICE_TOKEN), timeout=30) as http:
            async with Client(streamable_http_client(served.url, http_client=http)) as client:
                tools = (await client.list_tools()).tools
        with pytest.raises(httpx2.HTTPError):
            async with httpx2.AsyncClient(timeout=10) as plain:
                await plain.post(served.url.replace("https://", "http://"))
    assert len(tools) == 3


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"oauth_scopes": ("mcp:tools",)}, "need --oauth-issuer"),
        ({"oauth_issuer": "http://login.example.com"}, "use https"),
        (
            {"oauth_issuer": "https://login.example.com", "host": "0.0.0.0"},
            "needs --public-url, the URL people use (e.g. https://agents.example.com/mcp)",
        ),
    ],
)
def test_oauth_settings_that_cannot_work_are_refused(
    tmp_path: Path, overrides: dict[str, object], complaint: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        open_listener(http_settings(tmp_path, "streamable-http", **overrides), environ={})
    assert complaint in refused.value.message
