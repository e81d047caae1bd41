"""The package as PyPI would get it: a wheel and an sdist that build offline, pass `twine check --strict`, carry
the metadata (version from `mcp_subagents/core/version.py`, license file, classifiers; no URL until the repository has
a public one) and the built-in agents."""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import mcp_subagents
from mcp_subagents.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return out


def wheel_metadata(dist: Path) -> tuple[Message, list[str]]:
    [wheel] = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = email.message_from_bytes(
            archive.read(f"mcp_subagents-{mcp_subagents.__version__}.dist-info/METADATA")
        )
    return metadata, names


def test_twine_accepts_the_wheel_and_the_sdist(dist: Path) -> None:
    files = sorted(str(path) for path in dist.iterdir())
    assert sorted(Path(f).suffix for f in files) == [".gz", ".whl"]
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2


def test_the_wheel_carries_the_metadata_a_release_needs(dist: Path) -> None:
    metadata, names = wheel_metadata(dist)
    assert metadata["Name"] == "mcp-subagents"
    assert metadata["Version"] == mcp_subagents.__version__
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    assert f"mcp_subagents-{mcp_subagents.__version__}.dist-info/licenses/LICENSE" in names
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers and "Typing :: Typed" in classifiers
    assert metadata.get_all("Project-URL") is None  # no placeholder address: none is known yet
    assert metadata["Requires-Python"] == ">=3.11"
    builtin = {Path(name).name for name in names if name.startswith("mcp_subagents/_builtin_agents/")}
    assert builtin == {"Bash.md", "Explore.md", "Plan.md", "general-purpose.md"}
    assert "mcp_subagents/py.typed" in names


def test_the_team_mode_is_an_extra_that_the_default_install_does_without(dist: Path) -> None:
    metadata, _ = wheel_metadata(dist)
    requires = [Requirement(line) for line in metadata.get_all("Requires-Dist") or []]
    for_team = [req for req in requires if req.marker is not None and req.marker.evaluate({"extra": "team"})]
    assert sorted(req.name for req in for_team) == ["dbos", "psycopg"]
    default_install = [req.name for req in requires if req.marker is None or req.marker.evaluate({"extra": ""})]
    assert "dbos" not in default_install and "psycopg" not in default_install


def test_the_sdist_holds_the_sources_and_no_stray_files(dist: Path) -> None:
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = {Path(name).parts[1] for name in archive.getnames() if len(Path(name).parts) > 1}
    assert {"mcp_subagents", "agents", "tests", "LICENSE", "README.md", "pyproject.toml"} <= top
    assert "over-http.txt" not in top and ".ci" not in top


def test_version_comes_from_one_place(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"mcp-subagents {mcp_subagents.__version__}\n"
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'path = "mcp_subagents/core/version.py"' in pyproject
