"""Connections to the team's Postgres database (psycopg 3, asyncio): a few for statements, one that listens."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..core.errors import SubagentsError
from .schema import CHANNEL, SCHEMA_LOCK, STATEMENTS

CONNECTIONS = 4
CONNECT_TIMEOUT_S = 10
CLIENT_ENCODING = "utf8"
"""utf8 whatever the database's encoding: on a SQL_ASCII database (what initdb makes in a C locale) text would come
back as bytes."""


class DatabaseError(SubagentsError):
    """The team's database cannot be reached or refused a statement."""


def redacted_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.Error:
        return "(an unreadable database URL)"
    user = f"{info['user']}@" if info.get("user") else ""
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{user}{info.get('host', '')}{port}/{info.get('dbname', '')}"


class Database:
    """A small pool of autocommit connections; `listen` hands each notification on `CHANNEL` to a callback."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._free = anyio.Semaphore(CONNECTIONS)
        self._closed = False

    async def open(self) -> None:
        """Connect once and make our tables (idempotent; replicas starting together take turns).

        Raises:
            DatabaseError: the database cannot be reached or the tables cannot be made."""
        async with self.connection() as connection, connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            for statement in STATEMENTS:
                await connection.execute(statement)

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        try:
            return await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, client_encoding=CLIENT_ENCODING
            )
        except psycopg.Error as exc:
            raise DatabaseError(f"Cannot connect to the database {redacted_url(self.url)}: {exc}") from None

    @asynccontextmanager
    async def connection(self) -> AsyncGenerator[psycopg.AsyncConnection[Any]]:
        """A connection of the pool for a few statements; one that failed is closed rather than reused.

        Raises:
            DatabaseError: connecting failed, or a statement did."""
        async with self._free:
            connection = self._idle.pop() if self._idle else await self._connect()
            try:
                yield connection
            except psycopg.Error as exc:
                await connection.close()
                raise DatabaseError(f"The database {redacted_url(self.url)} refused a statement: {exc}") from None
            except BaseException:
                await connection.close()
                raise
            if connection.closed or self._closed:
                await connection.close()
            else:
                self._idle.append(connection)

    async def fetch(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async with self.connection() as connection:
            cursor = await connection.execute(query, params)  # pyright: ignore[reportArgumentType]
            return await cursor.fetchall() if cursor.description is not None else []

    async def execute(self, query: str, params: tuple[Any, ...] = ()) -> int:
        """Run one statement; the rows it touched."""
        async with self.connection() as connection:
            cursor = await connection.execute(query, params)  # pyright: ignore[reportArgumentType]
            return cursor.rowcount

    async def notify(self, payload: dict[str, Any]) -> None:
        await self.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(payload)))

    async def listen(self, handle: Callable[[dict[str, Any]], None], *, ready: anyio.Event) -> None:
        """Hand every notification on `CHANNEL` to `handle` until cancelled; `ready` is set once listening."""
        connection = await self._connect()
        try:
            await connection.execute(f"LISTEN {CHANNEL}")
            ready.set()
            async for notice in connection.notifies():
                try:
                    payload = json.loads(notice.payload)
                except json.JSONDecodeError:
                    continue
                if isinstance(payload, dict):
                    handle(payload)  # pyright: ignore[reportUnknownArgumentType]
        finally:
            with anyio.CancelScope(shield=True):
                await connection.close()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        with anyio.CancelScope(shield=True):
            for connection in idle:
                await connection.close()
