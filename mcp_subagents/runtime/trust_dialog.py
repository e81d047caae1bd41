"""Asking the person whether to trust a project folder, as Claude Code's trust dialog does, before a task runs there.

When the folder is not trusted (Claude Code's record, `--trust-project` and this server's remembered answers all
say no) and its own files would add hook commands, MCP servers or permissions (`trust_offer`), the task asks before
any of that is loaded: the question waits on the task's board like a permission question (the task is `waiting`),
so it reaches the person wherever those do; only the person answers it. Trust or no trust is remembered in the
state directory and never asked again for that folder; a question nobody answers leaves the folder untrusted for
this task and asks again next time. One question per folder at a time: a task that comes while it is open waits
for its answer. Where nobody can be asked (the tree's earlier question went unanswered, dontAsk mode), the folder
stays untrusted and the log says what was skipped, as before.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio

from ..config.trust_answers import folder_key
from ..core.errors import ConfigError
from ..definitions import AgentDefinition
from ..permissions.asking import Answer
from ..permissions.trust_question import TrustItem, trust_question
from ..tasks.questions import limits_paused
from ..tasks.record import TaskRecord
from .host import RunHost
from .trust_offer import trust_offer

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Asking:
    """A folder's trust question while it is open."""

    settled: anyio.Event = field(default_factory=anyio.Event)
    unanswered: bool = False
    """It timed out (or nobody could be asked): tasks that waited for it do not ask again."""


class TrustDialog:
    """The trust questions of one runtime."""

    def __init__(self, host: RunHost) -> None:
        self._host = host
        self._open: dict[str, _Asking] = {}
        """Folders being asked about right now."""

    async def settle(self, record: TaskRecord, definition: AgentDefinition, project: Path, *, agent: str) -> None:
        """Before `record`'s run loads what `project` brings: ask whether to trust the folder when the person has
        never said and its files would add something; returns once that is settled (trusted or not)."""
        trust = self._host.trust
        if trust.answers is None or trust.is_trusted(project) or trust.answer(project) is not None:
            return
        key = folder_key(project)
        other = self._open.get(key)
        if other is not None:
            tasks = self._host.tasks
            with limits_paused(tasks.lineage(record), tasks.limits.idle_timeout):
                await other.settled.wait()
            if not other.unanswered:  # answered there (which holds here too), or that task stopped: look again
                await self.settle(record, definition, project, agent=agent)
            return
        items = self._offer(definition, project)
        if not items or not self._may_ask(definition, project):
            return
        asking = self._open[key] = _Asking()
        try:
            asking.unanswered = not await self._ask(record, project, items, agent)
        finally:
            del self._open[key]
            asking.settled.set()

    def _offer(self, definition: AgentDefinition, project: Path) -> list[TrustItem]:
        host = self._host
        settings = host.policies.project_settings(project)
        return trust_offer(settings, definition, project, mode_fixed=host.settings.permission_mode is not None)

    def _may_ask(self, definition: AgentDefinition, project: Path) -> bool:
        """dontAsk mode and `denyInsteadOfPrompting` ask nobody, not even this."""
        host = self._host
        settings = host.run_settings(project)
        mode = host.agent_mode(definition, settings, project)
        if mode != "dontAsk" and not settings.deny_instead_of_prompting:
            return True
        host.warn_once(
            f"the project {project} was not asked about: the settings never ask ({mode} mode or "
            "permissions.denyInsteadOfPrompting), so it stays untrusted"
        )
        return False

    async def _ask(self, record: TaskRecord, project: Path, items: list[TrustItem], agent: str) -> bool:
        """Ask, and remember the answer; whether someone answered."""
        host, answers = self._host, self._host.trust.answers
        assert answers is not None
        question = trust_question(
            agent=agent,
            folder=str(project),
            items=items,
            remembered_in=str(answers.path),
            reason=(
                f"Subagent '{agent}' is about to run in {project}, which is not trusted, and the folder's own files "
                "would add hook commands, MCP servers or permissions to it."
            ),
        )
        answer = await host.tasks.ask(record, question)
        if answer.kind == "unanswered":
            self._note(record, _unanswered(project, answer))
            return False
        remember = partial(
            answers.remember, project, trusted=answer.allowed, at=time.time(), by=answer.by, via=answer.via
        )
        try:
            await anyio.to_thread.run_sync(remember)
        except ConfigError as exc:
            logger.warning("trust answer for %s: %s; it holds until the server stops", project, exc.message)
        self._note(record, _answered(project, answer))
        return True

    def _note(self, record: TaskRecord, line: str) -> None:
        logger.info("task %s: %s", record.id, line)
        self._host.tasks.log_line(record, line)


def _answered(project: Path, answer: Answer) -> str:
    by = f" ({answer.via})" if answer.via else ""
    if answer.allowed:
        return f"The person trusted the folder {project}{by}: its hooks, MCP servers and permissions count."
    return (
        f"The person chose not to trust the folder {project}{by}: its hooks, MCP servers and permissions are left out."
    )


def _unanswered(project: Path, answer: Answer) -> str:
    if answer.waited_s is None:
        why = "nobody could be asked (an earlier question of this task went unanswered)"
    else:
        why = f"nobody answered the trust question within {answer.waited_s:g} s (--ask-timeout)"
    return (
        f"The folder {project} is not trusted for this task: {why}. Its hooks, MCP servers and permissions are left "
        "out; the next task asks again."
    )
