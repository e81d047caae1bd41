"""One replica of a team's server: its row and heartbeat in the database, the tasks it mirrors, the notifications it
acts on (stop a task it runs, wake those who wait for a task another replica ran), and the watch over the other
replicas that carries a dead one's tasks on."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import anyio
from anyio.abc import TaskGroup
from psycopg.types.json import Jsonb

from ..core.errors import ConfigError
from ..core.redaction import Redactor
from ..permissions.rules import RuleError
from ..permissions.session_rules import SessionRules
from ..tasks.endings import failed
from ..tasks.manager import TaskManager
from ..tasks.outcome import TaskOutcome
from ..tasks.record import TaskRecord
from ..tasks.team_link import ForwardedAnswer
from ..tasks.transcripts import TranscriptWriter
from . import engine
from .database import Database, DatabaseError, redacted_url
from .journal import TRANSCRIPT, Journal
from .remote import RemoteTasks, fetch_lines, write_files
from .schema import SCHEMA, STOP_STATEMENT

logger = logging.getLogger(__name__)

HEARTBEAT_S = 2.0
DEAD_AFTER_S = 10.0
"""A replica whose heartbeat is older than this is dead: its tasks are carried on elsewhere."""
STOP_WAIT_S = 2.0
"""How long a stop waits for the replica that runs the task before it ends the task itself."""


@dataclass(frozen=True, slots=True)
class Carried:
    """A task this replica takes over: what its launch recorded, and its files (written here)."""

    record_id: str
    launch: dict[str, Any]
    project: Path
    created: float


CarryOn = Callable[[Carried], Awaitable[TaskRecord]]
"""The runtime's part: start the task again from its files, under its own id."""
MAX_FIELD = 512
"""The longest field an answer through the database may have (ids, a name, where it was given)."""


@dataclass(slots=True)
class Joining:
    """A task being made the team's."""

    done: anyio.Event = field(default_factory=anyio.Event)
    error: Exception | None = None


class TeamControl(Protocol):
    """What other replicas (and `tasks stop|answer`) ask of the tasks this replica runs."""

    def stop(self, task_id: str) -> object: ...

    async def answer_as_sent(self, answer: ForwardedAnswer) -> None: ...


class Team:
    """The manager's `TeamLink` while the replica serves."""

    def __init__(
        self, database_url: str, manager: TaskManager, project: Path, redact: Redactor, rules: SessionRules
    ) -> None:
        self.replica = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._database = Database(database_url)
        self._manager = manager
        self._project = project
        self._redact = redact
        self._journal = Journal(self._database, self.replica, self._lost, self._ended)
        self._remote = RemoteTasks(self._database, manager.output_dir, redact)
        self._carry_on: CarryOn | None = None
        self._control: TeamControl | None = None
        self._group: TaskGroup | None = None
        self._rules = rules
        self._leaving = False
        self._joining: dict[str, Joining] = {}
        self._given_up: set[str] = set()
        """Tasks another replica took over from this one."""

    @asynccontextmanager
    async def serving(self, carry_on: CarryOn, control: TeamControl) -> AsyncGenerator[Team]:
        """Join the team: tables, this replica's row, the engine; carry tasks on with `carry_on`; stops and answers
        for the tasks this replica runs go to `control`."""
        self._carry_on = carry_on
        self._control = control
        lock = hold_state_dir(self._manager.output_dir.parent)
        try:
            await self._database.open()
            await self._register()
            await self._load_rules()
            engine.start_engine(self._database.url, self.replica, self.carry)
        except Exception as exc:  # a replica that cannot join the team does not start
            os.close(lock)
            await self._database.close()
            message = (
                exc.message if isinstance(exc, DatabaseError) else f"the team's engine (DBOS) did not start: {exc}"
            )
            raise ConfigError(message) from None
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                listening = anyio.Event()
                group.start_soon(self._journal.run)
                group.start_soon(self._listen, listening)
                with anyio.fail_after(30):
                    await listening.wait()
                group.start_soon(self._watch)
                self._manager.team = self
                self._rules.on_added = self._share_rule
                logger.info("replica %s joined the team (database %s)", self.replica, redacted_url(self._database.url))
                try:
                    yield self
                finally:
                    self._manager.team = None
                    self._rules.on_added = None
                    await self._leave()
                    group.cancel_scope.cancel()
        finally:
            engine.stop_engine()
            with anyio.CancelScope(shield=True):
                await self._gone()
                await self._database.close()
            os.close(lock)

    # ---- TeamLink ---------------------------------------------------------------------------------------------------

    def copier(self, task_id: str, file: str) -> Callable[[str], None]:
        return self._journal.copier(task_id, file)

    def join(self, record: TaskRecord) -> None:
        joining = self._joining[record.id] = Joining()
        assert self._group is not None
        self._group.start_soon(self._join, record, joining)

    async def joined(self, record: TaskRecord) -> TaskOutcome | None:
        joining = self._joining.get(record.id)
        if joining is None:
            return None
        await joining.done.wait()
        self._joining.pop(record.id, None)
        return failed(record, joining.error) if joining.error is not None else None

    async def _join(self, record: TaskRecord, joining: Joining) -> None:
        try:
            await self._begin(record)
        except Exception as exc:
            joining.error = exc
        finally:
            joining.done.set()

    async def _begin(self, record: TaskRecord) -> None:
        launch = dict(record.launch or {})
        project = str(launch.get("project") or self._project)
        rows = await self._database.fetch(
            f"INSERT INTO {SCHEMA}.tasks (id, owner, parent, replica, project, created, launch) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET replica = EXCLUDED.replica "
            "RETURNING xmax = 0",  # true when the row is new: a task taken over already has its workflow
            (record.id, record.owner, record.parent, self.replica, project, record.created, _json(launch)),
        )
        self._journal.register(record.id)
        if record.parent is None and "request" in launch and rows[0][0]:
            await engine.start_workflow(record.id)

    async def written(self, task_id: str) -> None:
        await self._journal.written(task_id)

    async def announced(self, task_id: str) -> None:
        joining = self._joining.get(task_id)
        if joining is not None:
            await joining.done.wait()
        await self._journal.written(task_id)

    def elsewhere(self, task_id: str) -> TaskRecord | None:
        return self._remote.get(task_id)

    async def refresh(self, task_id: str) -> None:
        await self._remote.refresh(task_id)

    async def recent_of(self, principal: str, limit: int) -> list[str]:
        rows = await self._database.fetch(
            f"SELECT id FROM {SCHEMA}.tasks WHERE owner = %s ORDER BY created DESC LIMIT %s", (principal, limit)
        )
        ids = [row[0] for row in rows]
        for task_id in ids:
            if self._manager.live(task_id) is None:
                await self._remote.refresh(task_id)
        return ids

    async def stop_elsewhere(self, record: TaskRecord) -> None:
        await request_stop(self._database, record.id)
        with anyio.move_on_after(STOP_WAIT_S):
            await record.done.wait()
        if not record.done.is_set() and await self._take_unheld(record.id):
            await self._end_here(record.id, TaskOutcome(state="stopped"))
            await self._remote.refresh(record.id)

    async def request_stop(self, task_id: str) -> None:
        await request_stop(self._database, task_id)

    async def keep_files(self) -> None:
        """Keep every task of the team written in this replica's state directory as it grows (the dashboard reads
        them there): tasks with new lines are read again every `HEARTBEAT_S`."""
        seen = 0
        while True:
            try:
                rows = await self._database.fetch(
                    f"SELECT task_id, max(n) FROM {SCHEMA}.lines WHERE n > %s GROUP BY task_id", (seen,)
                )
                for task_id, newest in rows:
                    if self._manager.live(task_id) is None:
                        await self._remote.refresh(task_id)
                    seen = max(seen, newest)
            except DatabaseError as exc:
                logger.warning("the team's database: %s", exc)
            await anyio.sleep(HEARTBEAT_S)

    # ---- carrying tasks on ------------------------------------------------------------------------------------------

    async def carry(self, task_id: str) -> str:
        """A task's workflow on this replica: wait for the task this replica runs, or take it over and run it."""
        record = self._manager.live(task_id)
        if record is None:
            record = await self._take_over(task_id)
        if record is None:
            return "ended"
        await record.done.wait()
        if self._leaving or task_id in self._given_up:
            # Stopped here only because another replica carries it on (or will): the workflow is not over.
            await anyio.sleep_forever()
        return record.state

    async def _take_over(self, task_id: str) -> TaskRecord | None:
        rows = await self._database.fetch(
            f"UPDATE {SCHEMA}.tasks SET replica = %s WHERE id = %s AND NOT ended "
            "RETURNING launch, project, created, stop_requested",
            (self.replica, task_id),
        )
        if not rows:
            return None
        launch, project, created, stop_requested = rows[0]
        await self._materialize(task_id)
        self._journal.register(task_id)
        if stop_requested:  # stopped while no replica ran it
            await self._end_here(task_id, TaskOutcome(state="stopped"))
            return None
        if not await anyio.Path(project).is_dir():
            await self._end_here(task_id, TaskOutcome(state="failed", error=unseen_project(self.replica, project)))
            return None
        assert self._carry_on is not None
        logger.warning("carrying on task %s, which another replica ran until it stopped", task_id)
        return await self._carry_on(Carried(task_id, dict(launch), Path(project), float(created)))

    async def _end_here(self, task_id: str, outcome: TaskOutcome) -> None:
        """Write the end of a task no replica runs (its row names this one now)."""
        path = self._manager.transcript_path(task_id)
        self._journal.register(task_id)
        TranscriptWriter(path, self._redact, self._journal.copier(task_id, TRANSCRIPT)).finished(outcome)
        await self._journal.written(task_id)

    async def _materialize(self, task_id: str) -> None:
        """Write the task's files here from the database; its lines from here on follow them."""
        files = await fetch_lines(self._database, task_id)
        await anyio.to_thread.run_sync(write_files, self._manager.output_dir, task_id, files)
        self._journal.continue_from(task_id, {file: len(lines) for file, lines in files.items()})

    async def _take_unheld(self, task_id: str) -> bool:
        """Take a task whose replica is gone (or that none holds); whether this replica holds it now."""
        rows = await self._database.fetch(
            f"UPDATE {SCHEMA}.tasks SET replica = %s WHERE id = %s AND NOT ended AND (replica IS NULL OR replica "
            f"NOT IN (SELECT id FROM {SCHEMA}.replicas)) RETURNING id",
            (self.replica, task_id),
        )
        if rows:
            await self._materialize(task_id)
        return bool(rows)

    def _ended(self, task_id: str) -> None:
        self._joining.pop(task_id, None)

    def _lost(self, task_id: str) -> None:
        """Another replica took the task over (this one was thought dead): stop running it here."""
        self._given_up.add(task_id)
        if self._manager.stop_own(task_id):
            logger.warning("task %s is carried on by another replica now; stopped here", task_id)

    # ---- always-allow answers, on every replica ---------------------------------------------------------------------

    async def _load_rules(self) -> None:
        for project, rule in await self._database.fetch(f"SELECT project, rule FROM {SCHEMA}.session_rules"):
            self._add_rule(project, rule)

    def _add_rule(self, project: object, rule: object) -> None:
        if isinstance(project, str) and isinstance(rule, str):
            with contextlib.suppress(RuleError):
                self._rules.add(Path(project), rule, shared=True)

    def _share_rule(self, project: Path, rule: str) -> None:
        assert self._group is not None
        self._group.start_soon(self._store_rule, str(project), rule)

    async def _store_rule(self, project: str, rule: str) -> None:
        try:
            await self._database.execute(
                f"INSERT INTO {SCHEMA}.session_rules (project, rule) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (project, rule),
            )
            await self._database.notify({"rule": {"project": project, "rule": rule}})
        except DatabaseError as exc:
            logger.warning("an always-allow answer counts on this replica only (the database refused it): %s", exc)

    # ---- the replicas -----------------------------------------------------------------------------------------------

    async def _register(self) -> None:
        await self._database.execute(
            f"INSERT INTO {SCHEMA}.replicas (id, host, pid, project) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET seen = now()",
            (self.replica, socket.gethostname(), os.getpid(), str(self._project)),
        )
        for (project,) in await self._database.fetch(f"SELECT DISTINCT project FROM {SCHEMA}.replicas"):
            if not await anyio.Path(project).is_dir():
                logger.warning(
                    "another replica serves the project %s, which this replica cannot see: replicas must see the "
                    "same project folders at the same paths (its tasks cannot be carried on here)",
                    project,
                )

    async def _watch(self) -> None:
        while True:
            await anyio.sleep(HEARTBEAT_S)
            try:
                await self._beat()
                await self._carry_on_the_dead()
            except DatabaseError as exc:
                logger.warning("the team's database: %s", exc)

    async def _beat(self) -> None:
        touched = await self._database.execute(
            f"UPDATE {SCHEMA}.replicas SET seen = now() WHERE id = %s", (self.replica,)
        )
        if touched == 0:  # the others took this replica for dead: its tasks are theirs now
            logger.error("this replica was taken for dead by the others (its heartbeat stopped); rejoining")
            await self._register()

    async def _carry_on_the_dead(self) -> None:
        rows = await self._database.fetch(
            f"DELETE FROM {SCHEMA}.replicas WHERE seen < now() - make_interval(secs => %s) RETURNING id",
            (DEAD_AFTER_S,),
        )
        dead = [row[0] for row in rows]
        if not dead:
            return
        logger.warning("replica(s) %s stopped answering; carrying their tasks on", ", ".join(dead))
        await self._end_nested_of(dead)
        orphans = await self._database.fetch(
            f"UPDATE {SCHEMA}.tasks SET replica = NULL WHERE replica = ANY(%s) AND NOT ended AND parent IS NULL "
            "RETURNING id",
            (dead,),
        )
        recovered = set(await engine.recover(dead))
        for (task_id,) in orphans:  # died between its row and its workflow: start one here
            if task_id not in recovered and not await engine.has_workflow(task_id):
                await engine.start_workflow(task_id)

    async def _end_nested_of(self, dead: list[str]) -> None:
        """A nested task lives inside its parent's tool call: the parent carried on gets that call's result as
        interrupted; the nested task ends as interrupted."""
        rows = await self._database.fetch(
            f"UPDATE {SCHEMA}.tasks SET replica = %s WHERE replica = ANY(%s) AND NOT ended AND parent IS NOT NULL "
            "RETURNING id",
            (self.replica, dead),
        )
        for (task_id,) in rows:
            await self._materialize(task_id)
            await self._end_here(task_id, TaskOutcome(state="interrupted"))

    async def _leave(self) -> None:
        """Stop this replica's tasks without ending them for the team: nothing more of them is written from here,
        and their workflows stay pending (`_gone` hands them to the others)."""
        self._leaving = True
        self._journal.close()
        for record in self._manager.live_tasks():
            self._manager.stop_own(record.id)

    async def _gone(self) -> None:
        """Tell the others this replica is gone (as if its heartbeat had stopped long ago): the next of them to look
        carries its tasks on, or the next replica to start when there is none."""
        try:
            with anyio.move_on_after(10):
                await self._database.execute(
                    f"UPDATE {SCHEMA}.replicas SET seen = to_timestamp(0) WHERE id = %s", (self.replica,)
                )
        except DatabaseError as exc:
            logger.warning("could not hand this replica's tasks over (others will after its heartbeat): %s", exc)

    async def _listen(self, ready: anyio.Event) -> None:
        while True:
            try:
                await self._database.listen(self._notified, ready=ready)
            except DatabaseError as exc:
                logger.warning("lost the team's notifications (reconnecting): %s", exc)
                await anyio.sleep(HEARTBEAT_S)

    def _notified(self, payload: dict[str, Any]) -> None:
        stop, answer = payload.get("stop"), forwarded_answer(payload.get("answer"))
        changed = payload.get("ended") or payload.get("asked")
        if self._group is None or self._control is None:
            return
        if isinstance(stop, str):
            self._control.stop(stop)
        if answer is not None and self._manager.live(answer.task_id) is not None:
            self._group.start_soon(self._control.answer_as_sent, answer)
        rule: object = payload.get("rule")
        if isinstance(rule, dict):
            shared = cast("dict[str, object]", rule)
            self._add_rule(shared.get("project"), shared.get("rule"))
        if isinstance(changed, str) and self._remote.get(changed) is not None:
            self._group.start_soon(self._remote.refresh, changed)
        grew: object = payload.get("grew")
        for task_id in cast("list[object]", grew) if isinstance(grew, list) else []:
            if isinstance(task_id, str) and self._remote.followed(task_id):
                self._group.start_soon(self._remote.refresh, task_id)

    async def forward_answer(self, answer: ForwardedAnswer) -> None:
        await self._database.notify({"answer": asdict(answer)})


async def request_stop(database: Database, task_id: str) -> None:
    """Ask the team to stop a task: the replica that runs it is told at once, and no replica carries it on later."""
    await database.execute(STOP_STATEMENT, (task_id,))
    await database.notify({"stop": task_id})


def forwarded_answer(payload: object) -> ForwardedAnswer | None:
    """An answer sent through the database (`tasks answer`, a host or a dashboard on another replica), checked field
    by field."""
    if not isinstance(payload, dict):
        return None
    fields = cast("dict[str, object]", payload)
    values = [fields.get(name) for name in ("task_id", "question_id", "choice", "by", "via")]
    if not all(isinstance(value, str) and len(value) <= MAX_FIELD for value in values):
        return None
    task_id, question_id, choice, by, via = cast("list[str]", values)
    if choice not in ("allow", "always", "deny"):
        return None
    return ForwardedAnswer(task_id, question_id, choice, by, via)


def hold_state_dir(state_dir: Path) -> int:
    """Lock the state directory for this replica alone (the lock goes with the process). Replicas write the team's
    tasks there as files: two sharing one folder would overwrite each other's.

    Raises:
        ConfigError: another replica holds it."""
    fd = os.open(state_dir / "replica.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(
            f"another replica of the team uses the state directory {state_dir}: give each replica its own "
            "(--state-dir or MCP_SUBAGENTS_STATE_DIR)"
        ) from None
    return fd


def unseen_project(replica: str, project: str) -> str:
    return (
        f"Replica {replica} cannot see the project folder {project}: every replica must see the same project "
        "folders at the same paths (shared storage), so this task cannot go on here."
    )


def _json(value: dict[str, Any]) -> Jsonb:
    return Jsonb(value)
