"""DBOS Transact, the durable-execution engine under a team's tasks: each task a host launches is a DBOS workflow
whose id is the task's. DBOS keeps the workflow's state in Postgres and, when a replica dies, hands each of its
pending workflows to exactly one other replica (`recover`); what the workflow does there is carry the task on from
its last completed turn (our own lines in the database are the checkpoints).

DBOS is one engine per process: `start_engine` configures it once, `stop_engine` ends it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
from dbos import DBOS, SetWorkflowID

from ..core.version import __version__
from .database import CLIENT_ENCODING

logger = logging.getLogger(__name__)

WORKFLOW_NAME = "mcp_subagents.task"

_carry: Callable[[str], Awaitable[str]] | None = None
"""What a workflow does on this replica (the team's `carry`); set by `start_engine`."""


@DBOS.workflow(name=WORKFLOW_NAME)
async def task_workflow(task_id: str) -> str:
    """A task's life on the team: carried to its end on whichever replica runs the workflow; its final state."""
    if _carry is None:
        raise RuntimeError("the team's engine is not started")
    return await _carry(task_id)


def start_engine(database_url: str, replica: str, carry: Callable[[str], Awaitable[str]]) -> None:
    """Configure and launch DBOS on this process's event loop (its workflows run there, beside ours).

    Called on the event loop's thread: DBOS runs the coroutines of recovered workflows on the loop it was launched
    from."""
    global _carry
    _carry = carry
    DBOS(
        config={
            "name": "mcp-subagents",
            "system_database_url": with_client_encoding(database_url),
            "executor_id": replica,
            # Recovery hands a workflow only to replicas of the same version.
            "application_version": __version__,
            "log_level": "WARNING",  # its start-up notes (and a console's address) are not the server's to print
        }
    )
    DBOS.launch()


def with_client_encoding(url: str) -> str:
    """The URL with `client_encoding=utf8` (unless it names one): DBOS's connections get text, not bytes, from a
    SQL_ASCII database too."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name == "client_encoding" for name, _ in query):
        return url
    return urlunsplit(parts._replace(query=urlencode([*query, ("client_encoding", CLIENT_ENCODING)])))


def stop_engine() -> None:
    global _carry
    _carry = None
    DBOS.destroy(destroy_registry=False)


async def start_workflow(task_id: str) -> None:
    """Start the task's workflow here (it finds the task already running on this replica)."""
    with SetWorkflowID(task_id):
        await DBOS.start_workflow_async(task_workflow, task_id)


async def has_workflow(task_id: str) -> bool:
    return await DBOS.get_workflow_status_async(task_id) is not None


async def recover(replicas: list[str]) -> list[str]:
    """Hand the pending workflows of dead `replicas` back to the team (each to exactly one replica); their ids."""
    handles = await anyio.to_thread.run_sync(DBOS._recover_pending_workflows, replicas)  # pyright: ignore[reportPrivateUsage]
    return [handle.get_workflow_id() for handle in handles]
