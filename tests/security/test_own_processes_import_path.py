"""Attack: a project that holds a folder named `mcp_subagents`, in which the server is started.

Hosts start stdio servers in the project folder. The server starts Python processes of its own (the agent-file
prescan on a first start, model processes when busy); started with `python -m`, Python puts the working directory
first on the import path, so the project's `mcp_subagents/__init__.py` ran instead of ours, with the server's
environment (the API key). Before the fix, the first test found the marker file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_subagents.cli import prescan as catalog_prescan
from mcp_subagents.cli.arguments import settings_for_command_line
from mcp_subagents.cli.prescan import start_prescan
from mcp_subagents.core.processes import own_module_command
from mcp_subagents.models.providers import ProviderConfig, WorkerStartup
from mcp_subagents.models.spread import ModelProcess


def hostile_project(root: Path) -> tuple[Path, Path]:
    """A project whose `mcp_subagents` package writes a marker file when imported; (project, marker)."""
    project, marker = root / "project", root / "PWNED"
    package = project / "mcp_subagents"
    package.mkdir(parents=True)
    payload = f"open({str(marker)!r}, 'w').write('the project ran its code in our process')\n"
    (package / "__init__.py").write_text(payload)
    for module in ("catalog_prescan.py", "__main__.py"):
        (package / module).write_text(payload)
    (package / "models").mkdir()
    (package / "models" / "__init__.py").write_text(payload)
    (package / "models" / "worker.py").write_text(payload)
    return project, marker


def test_the_first_start_prescan_does_not_import_the_projects_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, marker = hostile_project(tmp_path)
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(catalog_prescan, "a_core_is_free", lambda: True)
    monkeypatch.setattr(catalog_prescan, "PRESCAN_FILES", 1)
    argv = ["serve", "--state-dir", str(tmp_path / "state")]
    settings = settings_for_command_line(argv)
    assert settings is not None
    prescan = start_prescan(settings, argv)
    assert prescan is not None
    assert prescan.process.wait(timeout=60) == 0
    assert list((tmp_path / "state" / "catalog-cache").glob("*.json"))  # the prescan did its work
    assert not marker.exists()


def test_a_command_for_our_own_module_runs_ours_in_any_folder(tmp_path: Path) -> None:
    project, marker = hostile_project(tmp_path)
    finished = subprocess.run(
        [*own_module_command("mcp_subagents.core.processes")], cwd=project, capture_output=True, timeout=60, check=False
    )
    assert finished.returncode == 0, finished.stderr
    assert not marker.exists()


@pytest.mark.anyio
async def test_a_model_process_does_not_import_the_projects_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, marker = hostile_project(tmp_path)
    monkeypatch.chdir(project)
    startup = WorkerStartup(
        config=ProviderConfig(name="anthropic", api_key="sk-ant-test", base_url="http://127.0.0.1:9"),
        deadline=5,
        max_retries=0,
    )
    with anyio.fail_after(60):
        process = await ModelProcess.start(startup)
    try:
        assert process.alive and os.getcwd() == str(project)
        assert not marker.exists()
    finally:
        await process.stop()
