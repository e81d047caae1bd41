"""The providers' clients share one TLS context per process (loading the CA bundle was most of building a client),
built as the SDK would build it and built again when `SSL_CERT_FILE` or `SSL_CERT_DIR` or the file they name change."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.models.anthropic import AnthropicModel
from mcp_subagents.models.openai import OpenAIModel
from mcp_subagents.models.tls import verify_context

SYSTEM_BUNDLE = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")


@pytest.mark.parametrize("adapter", [AnthropicModel, OpenAIModel])
def test_every_client_verifies_servers_with_the_processes_context(adapter: type[AnthropicModel | OpenAIModel]) -> None:
    contexts = {id(_client_context(adapter(api_key="k", base_url="https://api.example.invalid"))) for _ in range(2)}
    assert contexts == {id(verify_context())}
    assert verify_context().verify_mode == ssl.CERT_REQUIRED and verify_context().check_hostname


def _client_context(model: AnthropicModel | OpenAIModel) -> object:
    """The TLS context of the transport the adapter's SDK client sends through."""
    client: Any = model._client_for_request()  # pyright: ignore[reportPrivateUsage]
    return client._client._transport.ssl_context


@pytest.mark.skipif(not SYSTEM_BUNDLE.is_file(), reason="no system CA bundle to copy")
def test_another_certificate_file_or_a_changed_one_builds_the_context_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = verify_context()
    bundle = tmp_path / "bundle.pem"
    shutil.copyfile(SYSTEM_BUNDLE, bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    named = verify_context()
    assert named is not default and verify_context() is named
    with bundle.open("a") as edited:
        edited.write("\n")
    assert verify_context() is not named
    monkeypatch.delenv("SSL_CERT_FILE")
    assert verify_context() is not named
