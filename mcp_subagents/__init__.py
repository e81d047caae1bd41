"""mcp-subagents: Claude-Code-style subagents for any MCP host.

The public surface: `Settings`, `Subagents` (the runtime) and `build_server` to embed the server; `run_agent` and
`AgentRun` for the tool-use loop itself; `ScriptedModel`, `FunctionModel`, `text`, `tool_call` and `tool_calls` to
test agent files without a key; `AgentDefinition`; and the errors `SubagentsError` and `ToolError`.
"""

__version__ = "0.1.0"

from .definitions import AgentDefinition
from .errors import SubagentsError, ToolError
from .loop import AgentRun, run_agent
from .models.scripted import FunctionModel, ScriptedModel, text, tool_call, tool_calls
from .server import build_server
from .service import Subagents
from .settings import Settings

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
