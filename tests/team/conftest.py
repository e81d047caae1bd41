"""(placeholder until the Postgres fixtures land) a fresh database per test on $MCP_SUBAGENTS_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql


@pytest.fixture
def database_url() -> Iterator[str]:
    server = os.environ.get("MCP_SUBAGENTS_TEST_DATABASE_URL")
    if not server:
        pytest.skip("no Postgres")
    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield server.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
