"""When the server sets up the Bash sandbox: `--sandbox on` still at start (it refuses to start where the sandbox
cannot run); otherwise right after the host first lists the tools, so importing it and probing bubblewrap stay off
the start-up, and still before any Task runs a tool."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.sandbox import SandboxRuntime
from tests.support import make_settings, running_app


class _SandboxReport(logging.Handler):
    """Keeps the line the server logs once the sandbox is set up ("Bash sandbox on (...)" or "... off: why")."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.logged = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Bash sandbox "):
            self.lines.append(message)
            self.logged.set()


@pytest.fixture
def sandbox_report() -> Iterator[_SandboxReport]:
    report = _SandboxReport()
    logger = logging.getLogger("mcp_subagents")
    logger.addHandler(report)
    yield report
    logger.removeHandler(report)


def _missing_bubblewrap(tmp_path: Path) -> None:
    user_settings = tmp_path / "home" / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True, exist_ok=True)
    user_settings.write_text(json.dumps({"sandbox": {"bwrapPath": str(tmp_path / "no-such-bwrap")}}))


def test_sandbox_on_where_it_cannot_run_still_refuses_to_start(tmp_path: Path) -> None:
    _missing_bubblewrap(tmp_path)
    with pytest.raises(ConfigError, match="--sandbox on: the sandbox cannot run here"):
        Subagents(make_settings(tmp_path, sandbox="on"), environ={})


@pytest.mark.anyio
async def test_the_sandbox_is_set_up_after_the_first_tools_list_before_any_task(
    tmp_path: Path, sandbox_report: _SandboxReport
) -> None:
    _missing_bubblewrap(tmp_path)  # the same wherever the test runs: auto, and no bubblewrap, so off and why
    report = sandbox_report
    async with running_app(make_settings(tmp_path, sandbox="auto"), environ={}) as app:
        async with Client(build_server(app), mode="auto") as client:
            assert report.lines == []  # started and connected: nothing set up yet
            await client.list_tools()
            with anyio.fail_after(30):
                assert await anyio.to_thread.run_sync(report.logged.wait, 30)
            await client.list_tools()
        assert app.sandbox.state == "off"
    assert len(report.lines) == 1  # set up once
    assert report.lines[0].startswith(f"Bash sandbox off: {tmp_path / 'no-such-bwrap'} cannot run")


@pytest.mark.anyio
async def test_a_task_that_comes_before_any_tools_list_sets_the_sandbox_up_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_report: _SandboxReport
) -> None:
    _missing_bubblewrap(tmp_path)
    built_in: list[threading.Thread] = []  # the probe runs a process: not on the event loop's thread
    build = Subagents._build_sandbox  # pyright: ignore[reportPrivateUsage]

    def recording_build(app: Subagents) -> SandboxRuntime:
        built_in.append(threading.current_thread())
        return build(app)

    monkeypatch.setattr(Subagents, "_build_sandbox", recording_build)
    report = sandbox_report
    model = ScriptedModel([tool_call("Bash", {"command": "echo from-bash"}), text("done")])
    settings = make_settings(tmp_path, sandbox="auto", model="claude-sonnet-4-6")
    async with running_app(settings, model=model) as app:
        assert report.lines == []
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(30):
            await record.done.wait()
    assert record.outcome is not None and record.outcome.state == "completed"
    assert len(report.lines) == 1 and report.lines[0].startswith("Bash sandbox off: ")
    assert len(built_in) == 1 and built_in[0] is not threading.main_thread()
