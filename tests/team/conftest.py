"""Fixtures of the team tests: `postgres_url`, a Postgres server for the session, and `database_url`, a fresh
database on it for each test (tests/team/postgres.py says where the server comes from)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.team.postgres import (
    TEST_DATABASE_URL,
    fresh_database,
    missing_postgres,
    postgres_bin_dir,
    private_cluster,
)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The server's URL (database `postgres`): CI's, else a private cluster for this session (under pytest-xdist,
    one per worker, each on its own port)."""
    given = os.environ.get(TEST_DATABASE_URL)
    if given:
        yield given
        return
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        missing_postgres(
            "no Postgres found (initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin): install Debian's "
            f"postgresql, or give a server in {TEST_DATABASE_URL}"
        )
    with private_cluster(bin_dir) as cluster:
        yield cluster.url


@pytest.fixture
def database_url(postgres_url: str) -> Iterator[str]:
    """A new, empty database for this test alone, dropped after it (with any database named after it)."""
    with fresh_database(postgres_url) as url:
        yield url
