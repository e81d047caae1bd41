"""Input schemas of Task, TaskOutput and TaskStop, and argument validation with messages that name the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..core.errors import InvalidArgumentsError, UnknownAgentError
from ..core.json_values import JsonObject
from ..core.names import EFFORT_LEVELS
from ..models.resolve import TASK_MODEL_CHOICES

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

TASK_OUTPUT_MAX_TIMEOUT_MS = 600_000
TASK_OUTPUT_DEFAULT_TIMEOUT_MS = 30_000


def task_schema(agent_names: Sequence[str]) -> JsonObject:
    return {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A label of three to five words for the task"},
            "prompt": {"type": "string", "description": "The instructions the subagent works from"},
            "subagent_type": {
                "type": "string",
                "enum": list(agent_names),
                "description": "Which agent type runs the task",
            },
            "model": {
                "type": "string",
                "enum": list(TASK_MODEL_CHOICES),
                "description": "Optional model for this agent; overrides the agent definition's model.",
            },
            "resume": {
                "type": "string",
                "description": "Optional task id of an earlier task to continue; the prompt becomes its next turn.",
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Run in the background and return a task id at once; read the result with TaskOutput.",
            },
            "max_turns": {
                "type": "integer",
                "exclusiveMinimum": 0,
                "description": "Optional cap on model requests for this task and the subagents it launches, together.",
            },
            "effort": {
                "type": "string",
                "enum": list(EFFORT_LEVELS),
                "description": "Optional effort for this agent; overrides the agent definition's effort (default "
                "medium). Higher effort thinks longer and costs more.",
            },
            "isolation": {
                "type": "string",
                "enum": ["worktree"],
                "description": '"worktree" runs the agent in its own git worktree on a new branch, so its edits do not '
                "touch the checkout; the worktree is kept (and named in the result) if it changed something.",
            },
        },
        "required": ["description", "prompt", "subagent_type"],
        "additionalProperties": False,
    }


TASK_OUTPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "description": "The task ID to get output from"},
        "block": {"type": "boolean", "default": True, "description": "Whether to wait for completion"},
        "timeout": {
            "type": "number",
            "minimum": 0,
            "maximum": TASK_OUTPUT_MAX_TIMEOUT_MS,
            "default": TASK_OUTPUT_DEFAULT_TIMEOUT_MS,
            "description": "Max wait time in ms",
        },
    },
    "required": ["task_id"],
    "additionalProperties": False,
}

TASK_STOP_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "description": "The ID of the background task to stop"},
        "shell_id": {"type": "string", "description": "Deprecated: use task_id instead"},
    },
    "additionalProperties": False,
}


def validate_arguments(tool: str, schema: JsonObject, arguments: dict[str, Any]) -> None:
    """Check arguments against a tool's schema.

    Raises:
        UnknownAgentError: Task's subagent_type is not a loaded agent.
        InvalidArgumentsError: anything else, naming the field and what it accepts.
    """
    from jsonschema import Draft202012Validator  # 30 ms to import: not on the start-up path

    validator: Any = Draft202012Validator(schema)
    found: list[ValidationError] = list(validator.iter_errors(arguments))
    errors = sorted(found, key=lambda e: [str(part) for part in e.absolute_path])
    if not errors:
        return
    first = errors[0]
    if tool == "Task" and list(first.absolute_path) == ["subagent_type"] and first.validator == "enum":
        raise UnknownAgentError(str(first.instance), list(schema["properties"]["subagent_type"]["enum"]))
    problems = "; ".join(_describe(error, schema) for error in errors)
    raise InvalidArgumentsError(f"Invalid arguments for {tool}: {problems}")


def _describe(error: ValidationError, schema: JsonObject) -> str:
    field = ".".join(str(part) for part in error.absolute_path)
    properties: JsonObject = schema.get("properties", {})
    instance: Any = error.instance
    expected: Any = error.validator_value
    match error.validator:
        case "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            return f"missing required parameter '{missing}'"
        case "additionalProperties":
            given = cast("dict[str, Any]", instance) if isinstance(instance, dict) else {}
            extra = ", ".join(repr(name) for name in sorted(set(given) - set(properties)))
            return f"unknown parameter(s) {extra}; allowed parameters: {', '.join(properties)}"
        case "enum":
            allowed = ", ".join(str(value) for value in cast("list[Any]", expected))
            return f"'{field}' must be one of: {allowed} (got {instance!r})"
        case "type":
            return f"'{field}' must be of type {expected} (got {type(instance).__name__})"
        case _:
            return f"'{field}': {error.message}" if field else error.message
