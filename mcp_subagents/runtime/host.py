"""What assembling a run and the agent file's extension points ask of the runtime (`service.Subagents` is one): a
protocol, so that neither reaches back into the module that builds them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config.claude_settings import ClaudeSettings
from ..config.settings import Settings
from ..config.trust import ProjectTrust
from ..definitions import AgentDefinition, Catalog

if TYPE_CHECKING:
    from ..models.base import Model
    from ..models.pricing import PriceFiles
    from ..permissions.session_rules import SessionRules
    from ..sandbox import SandboxRuntime
    from ..tasks.manager import TaskManager
    from ..tasks.record import TaskRecord
    from ..tools.base import Tool
    from .extensions import RunPlace
    from .policies import RunPolicies
    from .request import TaskRequest


class RunHost(Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    @property
    def trust(self) -> ProjectTrust: ...
    @property
    def tasks(self) -> TaskManager: ...

    @property
    def prices(self) -> PriceFiles: ...

    @property
    def sandbox(self) -> SandboxRuntime: ...

    @property
    def policies(self) -> RunPolicies: ...

    @property
    def session_rules(self) -> SessionRules: ...

    @property
    def provider_name(self) -> str: ...
    @property
    def model_configured(self) -> bool: ...
    @property
    def sandbox_auto_allow(self) -> bool: ...

    @property
    def tools(self) -> dict[str, Tool]: ...

    async def model(self) -> Model: ...
    async def sandbox_ready(self) -> None: ...
    def catalog(self) -> Catalog: ...
    def definition(self, name: str, catalog: Catalog | None = None) -> AgentDefinition: ...
    def tool_environment(self) -> dict[str, str]: ...
    def warn_once(self, message: str) -> None: ...
    def warn_too_wide(self, reason: str) -> None: ...
    def run_settings(self, project: Path) -> ClaudeSettings: ...
    def agent_mode(self, definition: AgentDefinition, claude_settings: ClaudeSettings, project: Path) -> str: ...
    def launch(
        self,
        args: TaskRequest,
        *,
        catalog: Catalog | None = None,
        roots: tuple[Path, ...] = (),
        principal: str = ...,
        parent: TaskRecord | None = None,
        place: RunPlace | None = None,
        trace_meta: Mapping[str, Any] | None = None,
    ) -> TaskRecord: ...
