"""The Postgres the team tests stand on: each test gets its own empty database on 127.0.0.1, gone after it; a
private cluster listens on loopback alone and leaves nothing behind; without Postgres the tests skip, or fail
where Postgres was promised."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from tests.team.postgres import (
    REQUIRE_POSTGRES,
    TEST_ROLE,
    admin_connection,
    fresh_database,
    missing_postgres,
    postgres_bin_dir,
    private_cluster,
)


def scalar(url: str, query: sql.SQL | sql.Composed) -> object:
    with psycopg.connect(url) as connection:
        row = connection.execute(query).fetchone()
    assert row is not None
    return row[0]


def user_tables(url: str) -> object:
    return scalar(
        url, sql.SQL("SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')")
    )


def databases_named(server_url: str, prefix: str) -> list[str]:
    with admin_connection(server_url) as admin:
        rows = admin.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,)).fetchall()
    return sorted(str(row[0]) for row in rows)


def test_each_database_is_new_and_empty_and_sees_nothing_of_another(postgres_url: str) -> None:
    with fresh_database(postgres_url) as first, fresh_database(postgres_url) as second:
        assert urlsplit(first).path != urlsplit(second).path
        assert user_tables(first) == 0 and user_tables(second) == 0
        with psycopg.connect(first) as connection:
            connection.execute("CREATE TABLE notes (body text)")
            connection.execute("INSERT INTO notes VALUES ('only here')")
        assert scalar(first, sql.SQL("SELECT body FROM notes")) == "only here"
        assert scalar(second, sql.SQL("SELECT to_regclass('notes') IS NULL")) is True


def test_a_database_and_those_named_after_it_are_dropped_even_while_connected(postgres_url: str) -> None:
    with fresh_database(postgres_url) as url:
        name = urlsplit(url).path.lstrip("/")
        with admin_connection(postgres_url) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(f"{name}_dbos_sys")))
        left_open = psycopg.connect(url, autocommit=True)
        assert databases_named(postgres_url, name) == [name, f"{name}_dbos_sys"]
    assert databases_named(postgres_url, name) == []
    with pytest.raises(psycopg.OperationalError):
        left_open.execute("SELECT 1")
    left_open.close()


def test_the_database_url_reaches_the_server_over_tcp_on_loopback_as_a_role_that_is_no_superuser(
    database_url: str,
) -> None:
    parts = urlsplit(database_url)
    assert parts.scheme == "postgresql" and parts.hostname == "127.0.0.1" and parts.password
    assert scalar(database_url, sql.SQL("SELECT host(inet_server_addr())")) == "127.0.0.1"
    assert scalar(database_url, sql.SQL("SELECT current_database()")) == parts.path.lstrip("/")
    assert scalar(
        database_url, sql.SQL("SELECT rolcreatedb AND NOT rolsuper FROM pg_roles WHERE rolname = current_user")
    )


def test_a_private_cluster_listens_on_loopback_alone_asks_a_password_and_leaves_nothing_behind() -> None:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        missing_postgres("no Postgres found (initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin)")
    with private_cluster(bin_dir) as cluster:
        assert scalar(cluster.url, sql.SQL("SHOW listen_addresses")) == "127.0.0.1"
        assert urlsplit(cluster.url).username == TEST_ROLE
        wrong_password = cluster.url.replace(f":{urlsplit(cluster.url).password}@", ":wrong@")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(wrong_password).close()
    assert not cluster.folder.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(cluster.url, connect_timeout=5).close()


def test_postgres_is_found_in_debians_folder_of_the_newest_major_version(tmp_path: Path) -> None:
    for major in ("9", "15", "17"):
        (tmp_path / major / "bin").mkdir(parents=True)
        (tmp_path / major / "bin" / "initdb").touch()
    assert postgres_bin_dir(path="", debian_root=tmp_path) == tmp_path / "17" / "bin"
    assert postgres_bin_dir(path="", debian_root=tmp_path / "none") is None


def test_without_postgres_a_test_skips_unless_postgres_was_promised() -> None:
    with pytest.raises(pytest.skip.Exception, match="no Postgres here"):
        missing_postgres("no Postgres here", environ={})
    with pytest.raises(pytest.fail.Exception, match=f"no Postgres here, and {REQUIRE_POSTGRES} is set"):
        missing_postgres("no Postgres here", environ={REQUIRE_POSTGRES: "1"})
