"""Variables that carry HTTP headers carry credentials: a command must not find them in its environment.

Before, `ANTHROPIC_CUSTOM_HEADERS` (the extra headers of every model request, often an `Authorization` or a gateway
key) and the OpenTelemetry exporter's `OTEL_EXPORTER_OTLP_*HEADERS` reached Bash whole: none of their names ends
in `_KEY` or holds the word `TOKEN`, and their values start like no known key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeLLM

from .conftest import BWRAP
from .server import bash, make_scene, run_task, tool_results

pytestmark = pytest.mark.anyio

HEADER_VARIABLES = {
    "ANTHROPIC_CUSTOM_HEADERS": "Authorization: Bearer gateway-credential-0123456789\nX-Team: core",
    "OTEL_EXPORTER_OTLP_HEADERS": "api-key=otlp-credential-0123456789,team=core",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Basic%20dHJhY2VzOmNyZWRlbnRpYWw=",
    "CORP_PROXY_HEADER": "Proxy-Authorization: Basic cHJveHk6Y3JlZGVudGlhbA==",
    "SESSION_COOKIE": "sid=cookie-credential-0123456789",
    "UPSTREAM_EXTRA": "x-api-key: upstream-credential-0123456789",
    "DEPLOY_BEARER_VALUE": "Bearer deploy-credential-0123456789",
}
HARMLESS = {"LANG": "C.UTF-8", "EDITOR": "vi", "LS_COLORS": "di=01;34:ln=01;36"}
SANDBOXES = ["off", pytest.param("auto", marks=pytest.mark.skipif(not BWRAP.available, reason=BWRAP.reason))]


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_no_header_variable_reaches_a_command(tmp_path: Path, fake: FakeLLM, sandbox: str) -> None:
    scene = make_scene(tmp_path, fake, sandbox=sandbox, **HEADER_VARIABLES, **HARMLESS)
    scene.environ["MCP_SUBAGENTS_PERMISSION_MODE"] = "bypassPermissions"
    result, server = await run_task(scene, fake, bash("env; printenv | base64 -w0"))
    await server.close()
    [seen] = tool_results(fake)
    for name, value in HEADER_VARIABLES.items():
        assert f"{name}=" not in seen, name
        assert value.splitlines()[0] not in seen, name
    for name, value in HARMLESS.items():
        assert f"{name}={value}" in seen
    assert "done" in result
