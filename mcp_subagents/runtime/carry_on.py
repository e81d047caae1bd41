"""A team's task taken over from a replica that stopped: what its launch recorded for that (the request, the host's
roots, who launched it, the project), and starting it again from its transcript under its own id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.messages import AssistantMessage, Message, Usage, UserMessage
from ..core.principals import LOCAL_PRINCIPAL
from ..tasks.files import read_task
from ..tasks.record import CarriedTask, TaskRecord
from ..tasks.transcripts import read_history
from .request import TaskRequest

if TYPE_CHECKING:
    from ..team.replica import Carried
    from .service import Subagents

CARRIED_ON_NOTE = (
    "The server that ran this task stopped after your last message, and another one carries the task on from "
    "here. Go on with the task where you left off."
)


def launch_record(request: TaskRequest, roots: tuple[Path, ...], principal: str, project: Path) -> dict[str, Any]:
    """What another replica needs to run the task again: kept as JSON in the team's database."""
    return {
        "request": request.model_dump(mode="json"),
        "roots": [str(root) for root in roots],
        "principal": principal,
        "project": str(project),
    }


async def carry_on(app: Subagents, carried: Carried) -> TaskRecord:
    """Start the task again on this replica from its transcript (written here from the team's database).

    Raises:
        SubagentsError: it cannot run here (its agent is gone, no model): the team's task ends with that error."""
    launch = carried.launch
    request = TaskRequest.model_validate(launch["request"], strict=False)
    path = app.tasks.transcript_path(carried.record_id)
    snapshot = read_task(path)
    agent = snapshot.header.agent if snapshot is not None else (request.agent or "")
    catalog = await app.catalog_for_task(agent)
    return app.launch(
        request,
        catalog=catalog,
        roots=tuple(Path(root) for root in launch.get("roots", ())),
        principal=str(launch.get("principal") or LOCAL_PRINCIPAL),
        carried=CarriedTask(
            id=carried.record_id,
            created=carried.created,
            agent=agent,
            history=tuple(_going_on(read_history(path))),
            turns=snapshot.turns if snapshot is not None else 0,
            tool_uses=snapshot.tool_uses if snapshot is not None else 0,
            usage=snapshot.usage if snapshot is not None else Usage(),
        ),
    )


def _going_on(history: list[Message]) -> list[Message]:
    """The conversation a carried-on run sends next: it must end with the user's turn. A tool call the stopped
    replica never recorded a result for is answered as interrupted (`read_history`): never run twice unseen."""
    if history and isinstance(history[-1], AssistantMessage):
        history.append(UserMessage(content=CARRIED_ON_NOTE))
    return history
