"""The team's tasks as files, for the `tasks` command: each task's transcript and output written from the database
into a private scratch folder laid out as a state directory, so the command reads them as it reads a server's own;
stops and answers go to the replica that runs the task through the database."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import psycopg

from ..core.errors import SubagentsError
from ..permissions.asking import Choice
from ..tasks.control import PLACES, AnswerRequest
from ..tasks.team_link import ForwardedAnswer
from .database import CLIENT_ENCODING, CONNECT_TIMEOUT_S, redacted_url
from .journal import OUTPUT, TRANSCRIPT
from .remote import write_files
from .schema import CHANNEL, SCHEMA, STOP_STATEMENT


class TeamFolder:
    """Use as a context manager; `state_dir` is the scratch folder, `sync` brings it up to date."""

    def __init__(self, url: str) -> None:
        try:
            self._connection = psycopg.connect(
                url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, client_encoding=CLIENT_ENCODING
            )
        except psycopg.Error as exc:
            raise SubagentsError(f"Cannot connect to the database {redacted_url(url)}: {exc}") from None
        self.state_dir = Path(tempfile.mkdtemp(prefix="mcp-subagents-team-"))
        (self.state_dir / "tasks").mkdir(mode=0o700)

    def __enter__(self) -> TeamFolder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._connection.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def sync(self, task_id: str = "") -> None:
        """Write every task whose id starts with `task_id` (all of them by default) from the database."""
        files: dict[str, dict[str, list[str]]] = {}
        try:
            rows = self._connection.execute(
                f"SELECT task_id, file, line FROM {SCHEMA}.lines WHERE starts_with(task_id, %s) "
                "ORDER BY task_id, file, seq",
                (task_id.strip(),),
            ).fetchall()
        except psycopg.Error as exc:
            raise SubagentsError(f"The team's database refused to list its tasks: {exc}") from None
        for found, file, line in rows:
            files.setdefault(found, {TRANSCRIPT: [], OUTPUT: []}).setdefault(file, []).append(line)
        for found, lines in files.items():
            write_files(self.state_dir / "tasks", found, lines)

    def stop(self, task_id: str) -> None:
        """Ask the team to stop the task (no replica carries it on after this)."""
        self._connection.execute(STOP_STATEMENT, (task_id,))
        self._notify({"stop": task_id})

    def answer(self, request: AnswerRequest) -> None:
        """Send an answer to whichever replica runs the task."""
        choice = cast("Choice", request.choice)  # the command line offers allow, always and deny alone
        answer = ForwardedAnswer(request.task_id, request.question_id, choice, request.by, PLACES[request.place])
        self._notify({"answer": asdict(answer)})

    def _notify(self, payload: dict[str, Any]) -> None:
        self._connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(payload)))
