"""The inputs of Task, TaskOutput, TaskStop and the App view's TaskAnswer: pydantic models that give both the JSON
schema the host sees and the validation of what it sends, with messages that name the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import InvalidArgumentsError
from ..core.json_values import JsonObject
from ..definitions import Catalog
from ..permissions.asking import Choice
from ..runtime.request import TaskRequest

TASK_OUTPUT_MAX_TIMEOUT_MS = 600_000
TASK_OUTPUT_DEFAULT_TIMEOUT_MS = 30_000

Input = TypeVar("Input", bound=BaseModel)


class TaskOutputInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task_id: str = Field(description="The task ID to get output from")
    block: bool = Field(default=True, description="Whether to wait for completion")
    timeout: float = Field(
        default=TASK_OUTPUT_DEFAULT_TIMEOUT_MS, ge=0, le=TASK_OUTPUT_MAX_TIMEOUT_MS, description="Max wait time in ms"
    )


class TaskStopInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task_id: str | None = Field(default=None, description="The ID of the background task to stop")
    shell_id: str | None = Field(default=None, description="Deprecated: use task_id instead")

    @property
    def target(self) -> str:
        """The task to stop, by either name.

        Raises:
            InvalidArgumentsError: neither is given.
        """
        chosen = self.task_id or self.shell_id
        if not chosen:
            raise InvalidArgumentsError("Missing required parameter: task_id")
        return chosen


class TaskAnswerInput(BaseModel):
    """What the App view sends when the person clicks Allow once, Always allow or Deny."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task_id: str = Field(description="The task whose card shows the question")
    question_id: str = Field(description="The question's id, as TaskList gives it")
    choice: Choice = Field(
        description="allow: this call once; always: add the suggested rule too; deny: refuse the call"
    )
    token: str = Field(description="The question's token from the _meta of the TaskList result")


def task_schema(agent_names: Sequence[str]) -> JsonObject:
    """Task's input schema, with the agents a host may name."""
    schema = dict(host_schema(TaskRequest))
    properties = dict(cast("Mapping[str, Any]", schema["properties"]))
    properties["subagent_type"] = {**properties["subagent_type"], "enum": list(agent_names)}
    schema["properties"] = properties
    return schema


def task_output_schema() -> JsonObject:
    return host_schema(TaskOutputInput)


def task_stop_schema() -> JsonObject:
    return host_schema(TaskStopInput)


def task_answer_schema() -> JsonObject:
    return host_schema(TaskAnswerInput)


@cache
def host_schema(model: type[BaseModel]) -> JsonObject:
    """The model's JSON schema as a host shows it to its model: no titles, an optional field as its own type (not
    "this or null"), no null default. Cached; callers must not change it."""
    schema = model.model_json_schema()
    properties: dict[str, Any] = {}
    for name, raw in cast("dict[str, dict[str, Any]]", schema.get("properties", {})).items():
        prop = {key: value for key, value in raw.items() if key != "title"}
        branches = [branch for branch in prop.pop("anyOf", []) if branch.get("type") != "null"]
        if len(branches) == 1:
            prop = {**branches[0], **prop}
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        if "const" in prop:  # a one-value Literal: written as the enum the other choices are
            prop["enum"] = [prop.pop("const")]
        properties[name] = prop
    shaped: JsonObject = {"type": "object", "properties": properties}
    if schema.get("required"):
        shaped["required"] = list(schema["required"])
    shaped["additionalProperties"] = False
    return shaped


def parse_task(arguments: Mapping[str, Any], catalog: Catalog) -> TaskRequest:
    """The host's Task arguments, checked.

    Raises:
        InvalidArgumentsError: naming each bad field and what it accepts.
        UnknownAgentError: `subagent_type` (general-purpose when left out) names no loaded agent.
    """
    request = parse_arguments("Task", TaskRequest, arguments)
    if request.agent is not None and catalog.get(request.agent) is None:
        raise catalog.unknown(request.agent)
    return request


def parse_arguments(tool: str, model: type[Input], arguments: Mapping[str, Any]) -> Input:
    """`arguments` as the tool's input model.

    Raises:
        InvalidArgumentsError: naming each bad field and what it accepts.
    """
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        properties = cast("Mapping[str, JsonObject]", host_schema(model)["properties"])
        problems = _problems(exc, properties)
        raise InvalidArgumentsError(f"Invalid arguments for {tool}: {'; '.join(problems)}") from None


def _problems(exc: ValidationError, properties: Mapping[str, JsonObject]) -> list[str]:
    errors = sorted(exc.errors(), key=lambda error: [str(part) for part in error.get("loc", ())])
    unknown = [str(error["loc"][0]) for error in errors if error["type"] == "extra_forbidden" and error["loc"]]
    found = [_describe(error, properties) for error in errors if error["type"] != "extra_forbidden"]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        found.append(f"unknown parameter(s) {names}; allowed parameters: {', '.join(properties)}")
    return found


def _describe(error: Mapping[str, Any], properties: Mapping[str, JsonObject]) -> str:
    location: tuple[Any, ...] = error.get("loc", ())
    field = str(location[0]) if location else ""
    given: Any = error.get("input")
    prop: JsonObject = properties.get(field, {})
    kind = str(error.get("type", ""))
    if kind == "missing":
        return f"missing required parameter '{field}'"
    if kind in ("literal_error", "enum"):
        allowed = ", ".join(str(value) for value in cast("list[Any]", prop.get("enum", [])))
        return f"'{field}' must be one of: {allowed} (got {given!r})"
    if kind.endswith("_type") and "type" in prop:
        return f"'{field}' must be of type {prop['type']} (got {type(given).__name__})"
    return f"'{field}': {error.get('msg', 'invalid')}" if field else str(error.get("msg", "invalid"))
