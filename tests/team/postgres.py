"""A Postgres server for the team tests, and a fresh database per test.

The server is the one CI started (`MCP_SUBAGENTS_TEST_DATABASE_URL`, see .ci/postgres), else a private cluster of
the machine's Postgres in a temporary folder, started the way CI starts its own: on 127.0.0.1 and a free port only,
its socket in that folder, passwords everywhere, a role that may create databases but is no superuser.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

TEST_DATABASE_URL = "MCP_SUBAGENTS_TEST_DATABASE_URL"
REQUIRE_POSTGRES = "MCP_SUBAGENTS_REQUIRE_POSTGRES"
DEBIAN_POSTGRES = Path("/usr/lib/postgresql")
TEST_ROLE = "mcp_subagents_test"
# Bounds on every wait: pg_ctl's own start and stop wait, and each command we run.
PG_CTL_WAIT_SECONDS = 60
COMMAND_TIMEOUT_SECONDS = 90
CONNECT_TIMEOUT_SECONDS = 10
START_ATTEMPTS = 3


@dataclass(frozen=True)
class Cluster:
    url: str
    folder: Path


def postgres_bin_dir(path: str | None = None, debian_root: Path = DEBIAN_POSTGRES) -> Path | None:
    """Where initdb and pg_ctl are: PATH first, else Debian's folder of the newest major version."""
    initdb = shutil.which("initdb", path=path)
    if initdb is not None:
        return Path(initdb).resolve().parent
    found = [candidate.parent for candidate in debian_root.glob("*/bin/initdb") if candidate.parts[-3].isdigit()]
    return max(found, key=lambda bin_dir: int(bin_dir.parent.name), default=None)


def missing_postgres(reason: str, environ: Mapping[str, str] = os.environ) -> NoReturn:
    """Skip a test that needs Postgres, or fail it where Postgres was promised (CI)."""
    if environ.get(REQUIRE_POSTGRES):
        pytest.fail(f"{reason}, and {REQUIRE_POSTGRES} is set", pytrace=False)
    pytest.skip(reason)


def cluster_owner_prefix() -> list[str]:
    """initdb refuses root: there, the cluster belongs to the `postgres` user Debian's package creates."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def give_to_cluster_owner(*paths: Path) -> None:
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        for path in paths:
            os.chown(path, owner.pw_uid, owner.pw_gid)


def run_as_cluster_owner(command: list[str | Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cluster_owner_prefix(), *map(str, command)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def init_cluster(bin_dir: Path, folder: Path, superuser_password: str) -> None:
    password_file = folder / "pwfile"
    password_file.write_text(superuser_password + "\n", encoding="utf-8")
    password_file.chmod(0o600)
    give_to_cluster_owner(folder, password_file)
    done = run_as_cluster_owner(
        [
            bin_dir / "initdb",
            f"--pgdata={folder / 'data'}",
            "--username=postgres",
            f"--pwfile={password_file}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-sync",
        ]
    )
    password_file.unlink()
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")


def start_server(bin_dir: Path, folder: Path) -> int:
    """Start the cluster on a free port of 127.0.0.1 and return the port; a port taken meanwhile means another try.

    fsync off: the data is thrown away, and a replica killed in a test does not take Postgres down with it."""
    log = folder / "server.log"
    for _ in range(START_ATTEMPTS):
        port = free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        started = run_as_cluster_owner(
            [
                bin_dir / "pg_ctl",
                f"--pgdata={folder / 'data'}",
                "--wait",
                f"--timeout={PG_CTL_WAIT_SECONDS}",
                f"--log={log}",
                f"--options={options}",
                "start",
            ]
        )
        if started.returncode == 0:
            return port
    raise RuntimeError(f"Postgres did not start: {log.read_text(encoding='utf-8', errors='replace')}")


def stop_server(bin_dir: Path, folder: Path) -> None:
    if (folder / "data" / "postmaster.pid").exists():
        run_as_cluster_owner([bin_dir / "pg_ctl", f"--pgdata={folder / 'data'}", "--mode=immediate", "--wait", "stop"])


def create_test_role(port: int, superuser_password: str, password: str) -> None:
    with psycopg.connect(
        host="127.0.0.1",
        port=port,
        user="postgres",
        password=superuser_password,
        dbname="postgres",
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
    ) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD {}").format(
                sql.Identifier(TEST_ROLE), sql.Literal(password)
            )
        )


@contextmanager
def private_cluster(bin_dir: Path) -> Generator[Cluster]:
    """A cluster of its own in a temporary folder, stopped and removed after; its URL names the `postgres` database.

    The folder lies in /tmp: the server's socket lives there, and a socket's path must stay under 108 bytes."""
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            missing_postgres("running as root, and there is no `postgres` user to own a Postgres cluster")
    folder = Path(tempfile.mkdtemp(prefix="mcp-subagents-pg-", dir="/tmp"))
    try:
        superuser_password, password = secrets.token_hex(16), secrets.token_hex(16)
        init_cluster(bin_dir, folder, superuser_password)
        port = start_server(bin_dir, folder)
        create_test_role(port, superuser_password, password)
        yield Cluster(f"postgresql://{TEST_ROLE}:{quote(password)}@127.0.0.1:{port}/postgres", folder)
    finally:
        stop_server(bin_dir, folder)
        shutil.rmtree(folder, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """The same server and credentials, another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin_connection(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)


def drop_database_and_kin(server_url: str, name: str) -> None:
    """Drop the database and those named after it (DBOS makes `<name>_dbos_sys` for its system tables when not told
    otherwise), ending their connections first: a replica a test left running must not keep them alive."""
    with admin_connection(server_url) as admin:
        names = [
            str(row[0])
            for row in admin.execute(
                "SELECT datname FROM pg_database WHERE datname = %s OR datname LIKE %s", (name, f"{name}\\_%")
            )
        ]
        for doomed in names:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (doomed,),
            )
            # FORCE as well: it also ends a connection opened after the terminate.
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(doomed)))


@contextmanager
def fresh_database(server_url: str) -> Generator[str]:
    """A new, empty database `t_<random>` on the server of `server_url`; its URL, and it is dropped after."""
    name = f"t_{secrets.token_hex(8)}"
    with admin_connection(server_url) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(server_url, name)
    finally:
        drop_database_and_kin(server_url, name)
