"""A first start in a state directory: the agent files are parsed by a second process (which writes the cache)
while the server starts; the server then reads the cache, and falls back to parsing when the prescan fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.cli import prescan as catalog_prescan
from mcp_subagents.cli.arguments import settings_for_command_line
from mcp_subagents.cli.prescan import start_prescan
from mcp_subagents.config.settings import Settings
from mcp_subagents.definitions import cache as definitions_cache
from mcp_subagents.definitions import sources as definition_sources
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.runtime.sources import definition_sources as definition_sources_of
from tests.support import write_agent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, list[str]]:
    """A project with agent files and a server command line for it, in an environment of its own, on a machine
    with a core to spare; its 31 files count as many."""
    monkeypatch.setattr(catalog_prescan, "a_core_is_free", lambda: True)
    monkeypatch.setattr(catalog_prescan, "PRESCAN_FILES", 20)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable in [name for name in os.environ if name.startswith(("MCP_SUBAGENTS_", "XDG_"))]:
        monkeypatch.delenv(variable)
    work = tmp_path / "work"
    for number in range(30):
        write_agent(work / ".claude" / "agents", f"agent-{number:02d}", description=f"agent number {number}")
    write_agent(work / ".claude" / "agents", "colourful", extra="color: magenta\n")
    argv = ["serve", "--cwd", str(work), "--state-dir", str(tmp_path / "state")]
    settings = settings_for_command_line(argv)
    assert settings is not None
    return settings, argv


def _parses_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The agent files this process parses from now on."""
    parsed: list[str] = []
    real = definition_sources._parse_file  # pyright: ignore[reportPrivateUsage]

    def spy(path: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(definition_sources, "_parse_file", spy)
    return parsed


def test_the_first_start_reads_what_another_process_parsed(
    project: tuple[Settings, list[str]], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings, argv = project
    prescan = start_prescan(settings, argv)
    assert prescan is not None
    parsed_here = _parses_here(monkeypatch)
    with caplog.at_level("WARNING"):
        catalog = Subagents(settings, catalog_prescan=prescan).catalog()
    assert prescan.process.returncode == 0
    assert _project_cache(settings).is_file()
    assert {f"agent-{number:02d}" for number in range(30)} | {"colourful"} <= set(catalog.names())
    assert parsed_here == []  # every project file came from the cache the prescan wrote
    # The file's warning is still the server's to tell (the prescan's output goes nowhere).
    assert any("colourful.md" in record.getMessage() and "magenta" in record.getMessage() for record in caplog.records)


def test_no_prescan_once_the_state_directory_has_a_cache(project: tuple[Settings, list[str]]) -> None:
    settings, argv = project
    Subagents(settings).catalog()  # the first start writes the cache
    assert start_prescan(settings, argv) is None


def test_no_prescan_when_no_core_is_free(project: tuple[Settings, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside a busy server on busy cores, a second process would only add its own start to the CPU spent."""
    settings, argv = project
    monkeypatch.setattr(catalog_prescan, "a_core_is_free", lambda: False)
    assert start_prescan(settings, argv) is None
    assert "agent-29" in Subagents(settings).catalog().names()
    assert _project_cache(settings).is_file()  # the server wrote it: the next start reads it


def test_no_prescan_for_a_few_agent_files(project: tuple[Settings, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A few dozen files parse in the server in a millisecond or two; a second process costs about 0.1 s of CPU."""
    settings, argv = project
    monkeypatch.setattr(catalog_prescan, "PRESCAN_FILES", 40)
    assert start_prescan(settings, argv) is None


def test_a_failed_prescan_leaves_the_parsing_to_the_server(project: tuple[Settings, list[str]]) -> None:
    settings, _ = project
    failing = start_prescan(settings, ["serve", "--max-turns", "not-a-number"])
    assert failing is not None
    catalog = Subagents(settings, catalog_prescan=failing).catalog()
    assert failing.process.returncode == 2
    assert "agent-29" in catalog.names()


def test_a_late_prescan_is_stopped_and_the_server_parses(
    project: tuple[Settings, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = project
    monkeypatch.setattr(catalog_prescan, "WAIT_SECONDS", 0.2)
    hanging = catalog_prescan.CatalogPrescan(
        subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    )
    catalog = Subagents(settings, catalog_prescan=hanging).catalog()
    assert hanging.process.returncode is not None  # killed, not left behind
    assert "agent-29" in catalog.names()


def test_a_project_new_to_a_shared_state_directory_is_prescanned(
    project: tuple[Settings, list[str]], tmp_path: Path
) -> None:
    """The default state directory holds the caches of a person's other projects: a project that has none of its
    own yet is still parsed beside the server's start."""
    settings, argv = project
    other = tmp_path / "other"
    write_agent(other / ".claude" / "agents", "elsewhere")
    other_argv = ["serve", "--cwd", str(other), "--state-dir", str(settings.state_dir)]
    other_settings = settings_for_command_line(other_argv)
    assert other_settings is not None
    Subagents(other_settings).catalog()
    prescan = start_prescan(settings, argv)
    assert prescan is not None
    prescan.wait()
    assert prescan.process.returncode == 0 and _project_cache(settings).is_file()
    assert start_prescan(other_settings, other_argv) is None


def _project_cache(settings: Settings) -> Path:
    identity = definition_sources_of(settings).cache_identity()
    return definitions_cache.cache_path(settings.state_dir / definitions_cache.CACHE_FILE, identity)
