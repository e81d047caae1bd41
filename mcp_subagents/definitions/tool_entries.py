"""Which entries of an agent's `tools` give it a tool here, why the others do not, and when none does.

Tool names match exactly, as in Claude Code 2.1.328: `read` is not `Read`. Claude Code refuses to start an agent
whose `tools` list resolves to nothing (its error names the unrecognised entries) and runs one whose tools were all
removed on purpose (`tools: []`, or `disallowedTools` taking the rest); so does this server.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from ..core.errors import AgentToolsError
from ..core.names import AGENT_TOOLS, NESTED_TOOL_NAME
from .model import AgentDefinition, McpServerSpec, tool_base_name

CLAUDE_CODE_ONLY_TOOLS: Final = frozenset(
    {
        "AskUserQuestion",
        "BashOutput",
        "EnterPlanMode",
        "EnterWorktree",
        "ExitPlanMode",
        "KillShell",
        "LS",
        "ListMcpResourcesTool",
        "LSP",
        "MultiEdit",
        "NotebookEdit",
        "NotebookRead",
        "ReadMcpResourceTool",
        "SendMessage",
        "SlashCommand",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskOutput",
        "TaskStop",
        "TaskUpdate",
        "TeamCreate",
        "TeamDelete",
        "ToolSearch",
    }
)
"""Tools Claude Code has and this server does not: named as unavailable rather than unknown."""

"""The tool a subagent launches subagents with (Claude Code calls it Agent; both names select it)."""


@dataclass(frozen=True, slots=True)
class MissingTool:
    """An entry of `tools` that gives the agent no tool here."""

    entry: str
    """As written in the file, `Bash(git *)` patterns included."""
    reason: str
    """Why, as a clause: "tool names are case-sensitive: did you mean 'Read'?"."""


def missing_reason(entry: str, available: Collection[str], *, mcp_servers: Iterable[McpServerSpec] = ()) -> str:
    """Why `entry` gives no tool when `available` are the tools that exist for the run."""
    base = tool_base_name(entry)
    if base == "WebSearch":
        return "it needs the Anthropic provider (it is the API's server-side web search)"
    if base == "Skill":
        return "no skills are installed for it to load"
    server = mcp_server_of(base)
    if server is not None:
        if server in mcp_server_names(mcp_servers):
            return f"the agent's MCP server '{server}' does not offer it (or did not start: see the result's notes)"
        return (
            f"it needs an MCP server named '{server}', which the agent's mcpServers does not list (in Claude Code the "
            "session's own servers could provide it; here an agent gets only the servers its file names)"
        )
    if base in CLAUDE_CODE_ONLY_TOOLS:
        return "it exists only in Claude Code"
    same_but_case = next((name for name in available if name.lower() == base.lower()), None)
    if same_but_case is not None:
        return f"tool names are case-sensitive: did you mean '{same_but_case}'?"
    return "no tool has that name here"


def matching_tools(entry: str, available: Collection[str]) -> list[str] | None:
    """The available tools a `tools`/`disallowedTools` entry (its base name) names; None when it names none.

    `Task`/`Agent` name the nested Task tool; `mcp__server__*` and `mcp__server` every tool of that MCP server.
    """
    if entry in AGENT_TOOLS:
        entry = NESTED_TOOL_NAME
    if entry.startswith("mcp__") and (entry.endswith("__*") or entry.count("__") == 1):
        prefix = entry.removesuffix("*").removesuffix("__") + "__"
        found = [name for name in available if name.startswith(prefix)]
        return found or None
    return [entry] if entry in available else None


def mcp_server_of(tool: str) -> str | None:
    """`mcp__github__create_issue` -> `github`; None for a name that is not an MCP tool's."""
    if not tool.startswith("mcp__"):
        return None
    server = tool.removeprefix("mcp__").partition("__")[0]
    return server or None


def mcp_server_names(specs: Iterable[McpServerSpec]) -> set[str]:
    """The servers an agent's `mcpServers` names: host-config names and the keys of inline servers."""
    names: set[str] = set()
    for spec in specs:
        if isinstance(spec, str):
            names.add(spec)
        else:
            names.update(spec)
    return names


def missing_tools(
    definition: AgentDefinition, available: Collection[str], *, mcp_tools_known: bool = False
) -> list[MissingTool]:
    """The entries of `tools` that name none of the `available` tools, each with why.

    `Task`/`Agent` entries are never missing: without a nested Task tool the run is at its depth limit, which is
    not a mistake in the file. Before the agent's MCP servers have started (`mcp_tools_known` False: the validator,
    a launch check), an entry for a server its `mcpServers` lists counts as present.
    """
    servers = mcp_server_names(definition.mcp_servers)
    missing: list[MissingTool] = []
    for entry in definition.tools or ():
        base = tool_base_name(entry)
        if base in AGENT_TOOLS or matching_tools(base, available) is not None:
            continue
        if not mcp_tools_known and mcp_server_of(base) in servers:
            continue
        missing.append(MissingTool(entry, missing_reason(entry, available, mcp_servers=definition.mcp_servers)))
    return missing


def no_usable_tools(definition: AgentDefinition, missing: Collection[MissingTool], *, granted: bool) -> str | None:
    """What is wrong when `tools` lists entries and none of them gives a tool (and the agent's features grant none);
    None otherwise. Tools removed on purpose (`tools: []`, `disallowedTools`) are not a problem."""
    listed = definition.tools or ()
    missing_entries = {item.entry for item in missing}
    if not listed or granted or any(entry not in missing_entries for entry in listed):
        return None
    details = "; ".join(f"'{item.entry}': {item.reason}" for item in missing)
    return f"none of the tools its `tools` line lists exists here, so it would run with no tools at all ({details})"


def require_some_tool(definition: AgentDefinition, missing: Collection[MissingTool], *, granted: bool) -> None:
    """Refuse an agent whose `tools` list names tools but none of them exists here.

    Raises:
        AgentToolsError: naming each entry and why it gives no tool.
    """
    problem = no_usable_tools(definition, missing, granted=granted)
    if problem is not None:
        where = f" in {definition.path}" if definition.path else ""
        raise AgentToolsError(
            f"Agent '{definition.name}' was not started: {problem}. Fix the `tools` line{where}, or choose another "
            "subagent_type."
        )
