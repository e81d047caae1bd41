"""One request type for a Task: what the host, an agent launching a nested task, the command line and the dashboard
ask a subagent to do. Validated by pydantic wherever it is built; the host's `Task` tool schema is made from it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.names import DEFAULT_AGENT, EffortLevel, ModelAlias


class TaskRequest(BaseModel):
    """A Task, checked: unknown fields are refused, types are strict (as the JSON schema the host sees says)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    description: str = Field(description="A label of three to five words for the task")
    prompt: str = Field(description="The instructions the subagent works from")
    subagent_type: str | None = Field(
        default=None, description=f"Which agent type runs the task; {DEFAULT_AGENT} when left out"
    )
    model: ModelAlias | None = Field(
        default=None, description="Optional model for this agent; overrides the agent definition's model."
    )
    resume: str | None = Field(
        default=None,
        description="Optional task id of an earlier task to continue; the prompt becomes its next turn.",
    )
    run_in_background: bool = Field(
        default=False,
        description="Run in the background and return a task id at once; read the result with TaskOutput.",
    )
    max_turns: int | None = Field(
        default=None,
        gt=0,
        description="Optional cap on model requests for this task and the subagents it launches, together.",
    )
    effort: EffortLevel | None = Field(
        default=None,
        description="Optional effort for this agent; overrides the agent definition's effort (default medium). "
        "Higher effort thinks longer and costs more.",
    )
    isolation: Literal["worktree"] | None = Field(
        default=None,
        description='"worktree" runs the agent in its own git worktree on a new branch, so its edits do not touch '
        "the checkout; the worktree is kept (and named in the result) if it changed something.",
    )

    @property
    def agent(self) -> str | None:
        """The agent asked for: the one named, else the default one; None when resuming without a name (the task's
        own agent goes on)."""
        if self.subagent_type:
            return self.subagent_type
        return None if self.resume else DEFAULT_AGENT
