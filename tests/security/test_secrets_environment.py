"""What a command finds in its environment: no credentials, whatever their names, unless the settings pass one on.

Before, `AWS_ACCESS_KEY_ID`, `DATABASE_URL` with its password, `PGPASSWORD` and `GITHUB_PAT` reached Bash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_llm import FakeLLM

from .conftest import BWRAP
from .server import PROVIDER_KEY, bash, make_scene, run_task, tool_results

pytestmark = pytest.mark.anyio

SECRETS = {
    "ANTHROPIC_API_KEY": PROVIDER_KEY,
    "AWS_ACCESS_KEY_ID": "AKIAABCDEFGHIJKLMNOP",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-access-key-value",
    "AWS_SESSION_TOKEN": "aws-session-token-value",
    "DATABASE_URL": "postgres://app:db-password-value@db.internal:5432/app",
    "REDIS_URL": "redis://:redis-password-value@cache:6379/0",
    "PGPASSWORD": "pg-password-value",
    "GITHUB_PAT": "github-pat-value-0123456789",
    "GH_TOKEN": "gh-token-value-0123456789",
    "STRIPE_SECRET_KEY": "stripe-secret-value",
    "SENTRY_DSN": "https://public-key-value@o1.ingest.sentry.io/2",
    "DJANGO_SECRET_KEY_BASE": "django-secret-value",
    "DEPLOY_CREDENTIALS": "deploy-credentials-value",
    "NPM_CONFIG_TOKEN": "npm-token-value",
    "OPAQUE_NAME": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
}
HARMLESS = {"LANG": "C.UTF-8", "EDITOR": "vi", "TOKENIZERS_PARALLELISM": "false", "KEYBOARD_LAYOUT": "us"}
SANDBOXES = ["off", pytest.param("auto", marks=pytest.mark.skipif(not BWRAP.available, reason=BWRAP.reason))]


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_no_secret_reaches_a_command(tmp_path: Path, fake: FakeLLM, sandbox: str) -> None:
    scene = make_scene(tmp_path, fake, sandbox=sandbox, **SECRETS, **HARMLESS)
    scene.environ["MCP_SUBAGENTS_PERMISSION_MODE"] = "bypassPermissions"
    result, server = await run_task(scene, fake, bash("env; printenv | base64 -w0"))
    await server.close()
    [seen] = tool_results(fake)
    for name, value in SECRETS.items():
        assert f"{name}=" not in seen, name
        assert value not in seen, name
    for name, value in HARMLESS.items():
        assert f"{name}={value}" in seen
    assert "done" in result


async def test_settings_pass_named_secrets_on_and_hide_more(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off", GH_TOKEN="gh-token-for-the-tests", CORP_MIRROR="internal")
    scene.environ["MCP_SUBAGENTS_PERMISSION_MODE"] = "bypassPermissions"
    scene.settings(
        {
            "sandbox": {
                "credentials": {"allowEnvVars": ["GH_TOKEN"], "envVars": [{"name": "CORP_MIRROR", "mode": "deny"}]}
            }
        }
    )
    await (await run_task(scene, fake, bash("env")))[1].close()
    [seen] = tool_results(fake)
    assert "GH_TOKEN=gh-token-for-the-tests" in seen
    assert "CORP_MIRROR" not in seen and PROVIDER_KEY not in seen
