"""The tool type, the context a tool runs in, and argument validation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.errors import ToolError
from ..core.json_values import JsonObject
from ..core.messages import ToolDefinition
from ..core.processes import ProcessGroups

TOOL_THREADS = 4
"""Worker threads the file tools may hold at once, all runs together. anyio's default pool (40 threads) also serves
the protocol (stdout, HTTP); tools that held all of it stalled the server. Few, because each busy thread also
competes with the event loop for the GIL: with 8 scanning a huge file, tools/list took over a second."""

if TYPE_CHECKING:
    from ..models.base import Model

MAX_TOOL_RESULT_CHARS = 100_000
"""What the loop passes on of one tool's answer (the rest is cut). A tool whose answer pages stops within it."""


def lines_that_fit(lines: Sequence[str], budget: int) -> int:
    """How many of the first `lines`, joined by line breaks, fit in `budget` characters."""
    room = budget + 1  # each line costs its length and a line break, which the last one does without
    for count, line in enumerate(lines):
        room -= len(line) + 1
        if room < 0:
            return count
    return len(lines)


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown fields are rejected, as the contract says."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


@dataclass(slots=True)
class TodoList:
    """The subagent's TodoWrite state, one per run."""

    items: list[JsonObject] = field(default_factory=lambda: [])


class Placement(Protocol):
    @property
    def sandboxed(self) -> bool: ...
    @property
    def refusal(self) -> str | None:
        """Why the command may not run at all, if it may not."""
        ...


class WrappedCommand(Protocol):
    @property
    def argv(self) -> Sequence[str]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def pass_fds(self) -> tuple[int, ...]: ...
    async def conclude(self, output: str, *, failed: bool) -> list[str]:
        """Once the command ended: undo what its sandbox put in place, then notes for the model on what the sandbox
        blocked or undid while the command ran."""
        ...


class CommandSandbox(Protocol):
    """Where a Bash command runs: in the OS sandbox, outside it, or nowhere."""

    def placement(self, command: str, *, leave_requested: bool) -> Placement: ...
    def wrap(self, command: str, *, env: Mapping[str, str], cwd: Path) -> AbstractAsyncContextManager[WrappedCommand]:
        """The argv and environment that run `command` in the sandbox, for as long as the context is open."""
        ...


UrlCheck = Callable[[str], Awaitable[None]]
"""Raises `ToolError` when a URL may not be fetched (WebFetch checks every redirect hop with it)."""


_thread_limiter = anyio.CapacityLimiter(TOOL_THREADS)


def tool_threads() -> anyio.CapacityLimiter:
    """The limiter every tool's worker thread goes through (see `TOOL_THREADS`)."""
    return _thread_limiter


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAccess:
    """The run's model provider, for tools that ask a model themselves (WebFetch reads a page, WebSearch searches)."""

    model: Model
    main_model_id: str
    """The model the agent runs on."""
    fast_model_id: str
    """A small, fast model of the same provider (Claude Code uses Haiku for this)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    cwd: Path
    """Working directory; relative paths resolve against it."""
    allowed_roots: tuple[Path, ...]
    """Resolved directories file tools may touch (the working directory first)."""
    env: Mapping[str, str]
    """Environment for child processes, with provider secrets removed."""
    todos: TodoList = field(default_factory=TodoList)
    processes: ProcessGroups = field(default_factory=ProcessGroups)
    """Where Bash leaves the groups of processes that outlive it, so stopping the task can kill them."""
    models: ModelAccess | None = None
    """None when no provider model is at hand (tests with a scripted model): WebFetch then returns the page."""
    readable: Callable[[str], bool] | None = None
    """Whether a file may appear in search results (absolute path in); None shows everything. The permission
    policy hides files a Read deny rule covers, so Glob and Grep do not list or print them."""

    def shows(self, path: str) -> bool:
        return self.readable is None or self.readable(path)

    sandbox: CommandSandbox | None = None
    """The OS sandbox for Bash; None runs commands as they are."""
    check_url: UrlCheck | None = None
    """The permission check for a URL the run did not ask for itself (a redirect); None allows every URL."""
    tool_responses: bool = True
    """Whether a PostToolUse hook may ask for the tools' structured results; without one, Write does not read the
    file it replaces first (its `originalFile`), which cost up to 70 % more time over a 1 MB file."""


class ToolAnswer(str):
    """A tool's answer: the text the model reads, which also knows Claude Code's structured form of the result (what
    a PostToolUse hook gets as `tool_response`: for Read `{"type": "text", "file": {...}}`, for Bash `{"stdout",
    ...}`). A str, so whoever wants only the text reads it as before; the structure is built only when asked for
    (a hook wants it), since a diff of a large file is not free."""

    _build: Callable[[], object]

    def __new__(cls, text: str, build: Callable[[], object]) -> ToolAnswer:
        answer = super().__new__(cls, text)
        answer._build = build
        return answer

    def response(self) -> object:
        return self._build()

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        """Pickled (for a model process) as the plain text: the structure's builder is a closure."""
        return (str, (str(self),))


def structured_response(answer: str) -> Callable[[], object] | None:
    """How to build the structured form of a tool's answer, when the tool gave one."""
    return answer.response if isinstance(answer, ToolAnswer) else None


ToolFunction = Callable[[ToolContext, Any], Awaitable[str]]


def safe_text(text: str) -> str:
    r"""`text` with every lone surrogate written out, so it can be encoded (sent to a model, written to a file).

    A file name that is not UTF-8 reaches Python as surrogate escapes (`caf\udce9.txt`); it is shown as the byte it
    stands for (`caf\xe9.txt`), which `resolve_path` understands again."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_escaped(char) if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    description: str
    input_model: type[ToolInput]
    run: ToolFunction
    """Takes the context and a validated `input_model` instance; returns text (a `ToolAnswer` where the tool has a
    structured result for hooks) or raises `ToolError`."""
    read_only: bool = False
    """Read-only tools may run concurrently within one model turn."""
    schema: JsonObject | None = None
    """The input schema the model sees, when it is not `input_model`'s own (an MCP server's tool, a list of agent
    names known only at run time)."""

    def definition(self) -> ToolDefinition:
        schema = self.schema if self.schema is not None else input_schema(self.input_model)
        return ToolDefinition(name=self.name, description=self.description, input_schema=schema)

    def validate(self, arguments: JsonObject) -> ToolInput:
        """Check arguments against the input model.

        Raises:
            ToolError: naming each bad field and what it expects.
        """
        try:
            return self.input_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(_describe(error) for error in exc.errors())
            raise ToolError(f"Invalid arguments for {self.name}: {problems}") from None


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", ())) or "input"
    if error.get("type") == "extra_forbidden":
        return f"unexpected field '{where}'"
    if error.get("type") == "missing":
        return f"missing required field '{where}'"
    return f"'{where}': {error.get('msg', 'invalid')}"


@cache
def input_schema(model: type[BaseModel]) -> JsonObject:
    """JSON schema by alias, without pydantic's titles (noise for a model).

    Cached: generating it costs milliseconds and every run asks for every tool's schema. Callers must not mutate it.
    """
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)  # pyright: ignore[reportUnknownMemberType]
    schema["additionalProperties"] = False
    return schema
