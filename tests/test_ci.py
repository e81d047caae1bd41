"""What `.ci/run` promises: a type check that could not run fails CI, and the shared reference material is required."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def fake_pyright(folder: Path, exit_code: int) -> Path:
    folder.mkdir()
    script = folder / "pyright"
    script.write_text(f"#!/bin/sh\necho 'pyright ran with' \"$@\"\nexit {exit_code}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (folder / "python").symlink_to(sys.executable)
    return folder


def typecheck(path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / ".ci" / "typecheck")],
        env={"PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("exit_code", "expected", "message"),
    [
        (0, 0, ""),
        (1, 1, "pyright found type errors"),
        (2, 1, "pyright could not run (exit 2), so nothing was type-checked; failing"),
    ],
)
def test_the_type_check_fails_when_pyright_fails_or_cannot_run(
    tmp_path: Path, exit_code: int, expected: int, message: str
) -> None:
    bin_dir = fake_pyright(tmp_path / "bin", exit_code)
    run = typecheck(f"{bin_dir}:/usr/bin:/bin")
    assert run.returncode == expected, run.stderr
    assert "pyright ran with --pythonpath" in run.stdout and run.stdout.rstrip().endswith("mcp_subagents tests bench")
    assert message in run.stderr


def test_the_type_check_fails_when_pyright_is_missing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (sys.executable, shutil.which("bash"), shutil.which("dirname")):
        assert tool is not None
        (bin_dir / Path(tool).name).symlink_to(tool)
    run = typecheck(str(bin_dir))  # nothing else on PATH: no pyright
    assert run.returncode == 1
    assert "pyright could not run (exit 127)" in run.stderr


def test_ci_requires_the_shared_material_before_running_the_tests() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("export MCP_SUBAGENTS_REQUIRE_CORPUS=1") < ci.index("\npython -m pytest")
    assert "\n.ci/typecheck\n" in ci
