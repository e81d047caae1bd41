"""The error hierarchy. Raised inside the package; turned into MCP results only at the server edge."""

from __future__ import annotations

from pathlib import Path


class SubagentsError(Exception):
    """Base of every error this package raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(SubagentsError):
    """Bad settings, flags, environment or settings file."""


class DefinitionError(SubagentsError):
    """An agent definition that cannot be used; carries the file it came from."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class UnknownAgentError(SubagentsError):
    """A Task asked for a subagent type that is not loaded."""

    def __init__(self, name: str, available: list[str], *, failed: tuple[str, str] | None = None) -> None:
        listed = ", ".join(available) if available else "(none)"
        why = f" The file {failed[0]} defines it but did not load: {failed[1]}." if failed else ""
        super().__init__(f"Agent type '{name}' not found.{why} Available agents: {listed}")
        self.name = name
        self.available = available


class InvalidArgumentsError(SubagentsError):
    """A tool call whose arguments do not match the tool's schema."""


class TaskNotFoundError(SubagentsError):
    """TaskOutput or TaskStop with an id no task has."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"No task found with ID: {task_id}")
        self.task_id = task_id


class LaunchRefusedError(SubagentsError):
    """A Task that cannot start as asked; the host gets it as the agent's `<task_error>`."""


class ProviderNotConfiguredError(LaunchRefusedError):
    """No model provider (or no model the provider serves) is configured, so no subagent can run."""


class AgentToolsError(LaunchRefusedError):
    """The agent's `tools` list names tools, but none of them exists here."""


class RunError(SubagentsError):
    """A subagent run failed."""


class ModelAPIError(RunError):
    """The model provider failed after retries, or answered something unusable."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after
        """Seconds the provider asked us to wait before trying again, if it said."""


class PromptTooLongError(ModelAPIError):
    """The provider refused the request because its input does not fit the model's context window."""


class ModelRefusalError(RunError):
    """The model refused to continue."""


class BudgetExceededError(RunError):
    """The task spent its budget, or the tasks under one of its ancestors spent that ancestor's; it ends without
    another model request."""

    def __init__(
        self, *, budget_usd: float, spent_usd: float, source: str, holder: str | None = None, holder_agent: str = ""
    ) -> None:
        whose = "its budget" if holder is None else f"the budget of task {holder} ({holder_agent})"
        super().__init__(f"Task spent ${spent_usd:.6f}, past {whose} of ${budget_usd:g} ({source})")
        self.budget_usd = budget_usd
        self.spent_usd = spent_usd
        """What the budget's task spent, with the tasks it launched."""
        self.source = source
        self.holder = holder
        """The ancestor whose budget ran out; None when it was the task's own."""
        self.holder_agent = holder_agent


class TurnsSpentError(RunError):
    """The model requests that a Task call's `max_turns` allowed its task and the tasks it launched are spent; the
    task stops before its next request."""

    def __init__(self, *, limit: int, holder: str) -> None:
        super().__init__(f"The {limit} model requests that max_turns allowed task {holder} and its tasks are spent")
        self.limit = limit
        self.holder = holder


class ToolError(Exception):
    """Raised by a tool: becomes an `is_error` tool result that the model reads and can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StopRunError(ToolError):
    """A tool call was refused and the whole run must stop after it (a hook said `continue: false`)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class WorktreeError(SubagentsError):
    """The git worktree an isolated agent needs could not be made."""


class QuestionClosedError(SubagentsError):
    """A permission question is not open any more: answered already, timed out, or its task ended."""
