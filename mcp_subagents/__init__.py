"""mcp-subagents: Claude-Code-style subagents for any MCP host.

The public surface: `Settings`, `Subagents` (the runtime) and `build_server` to embed the server; `run_agent` and
`AgentRun` for the tool-use loop itself; `ScriptedModel`, `FunctionModel`, `text`, `tool_call` and `tool_calls` to
test agent files without a key; `AgentDefinition`; and the errors `SubagentsError` and `ToolError`.
"""

from .core.lazy import members_on_first_use as _members_on_first_use
from .core.version import __version__

TYPE_CHECKING = False  # not `typing`'s: importing it is a tenth of a relay's start (`cli.warm_relay`)
if TYPE_CHECKING:
    from .agent.loop import AgentRun, run_agent
    from .config.settings import Settings
    from .core.errors import SubagentsError, ToolError
    from .definitions import AgentDefinition
    from .mcp.server import build_server
    from .models.scripted import FunctionModel, ScriptedModel, text, tool_call, tool_calls
    from .runtime.service import Subagents
del TYPE_CHECKING  # not part of the package's surface

# Loaded when first asked for: importing any submodule runs this file, and the CLI and the tool modules must not
# pay for the MCP server stack (nor import its HTTP client) until they use it.
_HOMES = {
    "AgentDefinition": ".definitions",
    "AgentRun": ".agent.loop",
    "FunctionModel": ".models.scripted",
    "ScriptedModel": ".models.scripted",
    "Settings": ".config.settings",
    "Subagents": ".runtime.service",
    "SubagentsError": ".core.errors",
    "ToolError": ".core.errors",
    "build_server": ".mcp.server",
    "run_agent": ".agent.loop",
    "text": ".models.scripted",
    "tool_call": ".models.scripted",
    "tool_calls": ".models.scripted",
}

__all__ = [
    "AgentDefinition",
    "AgentRun",
    "FunctionModel",
    "ScriptedModel",
    "Settings",
    "Subagents",
    "SubagentsError",
    "ToolError",
    "__version__",
    "build_server",
    "run_agent",
    "text",
    "tool_call",
    "tool_calls",
]


__getattr__ = _members_on_first_use(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
