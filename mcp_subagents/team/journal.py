"""The mirror of each task's files in the database: every line a task's transcript or output file gets here is
queued and written, in order, to `lines`; the run waits for its messages to be written before it goes on (so a
replica that takes the task over finds every completed model turn and tool result). A replica that no longer holds
a task (another one took it over) writes nothing more of it and is told so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from .database import Database, DatabaseError
from .schema import SCHEMA

logger = logging.getLogger(__name__)

TRANSCRIPT = "transcript"
OUTPUT = "output"
END_LINE = '{"type": "end"'
RETRY_AFTER_S = 1.0


@dataclass(slots=True)
class _TaskLines:
    next_seq: dict[str, int] = field(default_factory=lambda: {TRANSCRIPT: 0, OUTPUT: 0})
    queued: list[tuple[str, int, str]] = field(default_factory=lambda: [])
    enqueued: int = 0
    written: int = 0
    registered: bool = False
    ended: bool = False


class Journal:
    """Owned by a replica: `copier` gives a task's files their mirror, `run` writes the lines."""

    def __init__(self, database: Database, replica: str, on_lost: Callable[[str], None]) -> None:
        self._database = database
        self._replica = replica
        self._on_lost = on_lost
        self._tasks: dict[str, _TaskLines] = {}
        self._wake = anyio.Event()
        self._written = anyio.Event()
        self._closed = False

    def continue_from(self, task_id: str, next_seq: dict[str, int]) -> None:
        """A task taken over from another replica: its lines go on after the ones in the database."""
        lines = self._tasks.setdefault(task_id, _TaskLines())
        lines.next_seq = dict(next_seq)

    def register(self, task_id: str) -> None:
        """The task's row exists (and names this replica): its lines may be written from now on."""
        self._tasks.setdefault(task_id, _TaskLines()).registered = True
        self._wake.set()

    def copier(self, task_id: str, file: str) -> Callable[[str], None]:
        """What a file of the task calls with each piece of text appended to it (on the event loop's thread)."""

        def copy(text: str) -> None:
            if self._closed:
                return
            lines = self._tasks.setdefault(task_id, _TaskLines())
            seq = lines.next_seq[file]
            lines.next_seq[file] = seq + 1
            lines.queued.append((file, seq, text))
            lines.enqueued += 1
            if file == TRANSCRIPT and text.startswith(END_LINE):
                lines.ended = True
            self._wake.set()

        return copy

    async def written(self, task_id: str) -> None:
        """Wait until every line queued so far for the task is in the database (or the journal gave up on it)."""
        lines = self._tasks.get(task_id)
        if lines is None or not lines.registered:
            return
        target = lines.enqueued
        while lines.written < target and self._tasks.get(task_id) is lines and not self._closed:
            written = self._written
            await written.wait()

    def close(self) -> None:
        """Write nothing more: a replica shutting down leaves its tasks' records as they are, for another replica
        to carry on (its own tasks' interrupted endings are not the team's)."""
        self._closed = True
        self._written.set()

    async def run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self._write_all()
            except DatabaseError as exc:
                logger.warning("could not write task lines to the database (retrying): %s", exc)
                await anyio.sleep(RETRY_AFTER_S)
                self._wake.set()
            written, self._written = self._written, anyio.Event()
            written.set()

    async def _write_all(self) -> None:
        batch = {task_id: lines for task_id, lines in self._tasks.items() if lines.registered and lines.queued}
        if not batch:
            return
        rows = [
            (task_id, file, seq, text, task_id, self._replica)
            for task_id, lines in batch.items()
            for file, seq, text in lines.queued
        ]
        # Lines queued while this batch is written are not in it: only the batch's own count as written.
        taken = {task_id: len(lines.queued) for task_id, lines in batch.items()}
        async with self._database.connection() as connection, connection.transaction():
            async with connection.cursor() as cursor:
                # Fenced: a line is written only while the task's row names this replica.
                await cursor.executemany(
                    f"INSERT INTO {SCHEMA}.lines (task_id, file, seq, line) SELECT %s, %s, %s, %s WHERE EXISTS "
                    f"(SELECT 1 FROM {SCHEMA}.tasks WHERE id = %s AND replica = %s) ON CONFLICT DO NOTHING",
                    rows,
                )
        lost = await self._not_held(list(batch))
        ended: list[str] = []
        for task_id, lines in batch.items():
            done = taken[task_id]
            del lines.queued[:done]
            lines.written += done
            if task_id in lost:
                self._tasks.pop(task_id, None)
                self._on_lost(task_id)
            elif lines.ended and not lines.queued:
                ended.append(task_id)
        for task_id in ended:
            self._tasks.pop(task_id, None)
            await self._database.execute(f"UPDATE {SCHEMA}.tasks SET ended = true WHERE id = %s", (task_id,))
            await self._database.notify({"ended": task_id})

    async def _not_held(self, task_ids: list[str]) -> set[str]:
        """The tasks among `task_ids` whose row names another replica now (they were taken over)."""
        rows = await self._database.fetch(
            f"SELECT id FROM {SCHEMA}.tasks WHERE id = ANY(%s) AND replica IS DISTINCT FROM %s",
            (task_ids, self._replica),
        )
        return {row[0] for row in rows}
