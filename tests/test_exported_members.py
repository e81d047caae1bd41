"""The public surface: `mcp_subagents.__all__` names exactly what the package exports, each documented."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mcp_subagents
from tests.support import server_environment

INCLUDED_PRIVATE_MEMBERS = ["__version__"]


def test_all_lists_every_export_once() -> None:
    # Members load on first use (see the package's __getattr__); dir() lists them all the same.
    exported = [
        name
        for name in dir(mcp_subagents)
        if (not name.startswith("_") and not isinstance(getattr(mcp_subagents, name), ModuleType))
        or name in INCLUDED_PRIVATE_MEMBERS
    ]
    assert sorted(mcp_subagents.__all__) == sorted(exported)  # ruff (RUF022) keeps __all__ itself in order


def test_importing_the_package_loads_no_member_until_asked() -> None:
    code = (
        "import sys, mcp_subagents\n"
        "watched = ('mcp_subagents.mcp.server', 'mcp_subagents.runtime.service', 'mcp')\n"
        "print(sorted(m for m in watched if m in sys.modules))\n"
        "from mcp_subagents import build_server\n"
        "print('mcp_subagents.mcp.server' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.split("\n")[:2] == ["[]", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Runtime'"):
        mcp_subagents.Runtime  # noqa: B018


def test_every_export_comes_from_the_package_and_is_documented() -> None:
    for name in mcp_subagents.__all__:
        if name in INCLUDED_PRIVATE_MEMBERS:
            continue
        member = getattr(mcp_subagents, name)
        assert member.__module__.startswith("mcp_subagents."), name
        doc = member.__doc__ or ""
        assert doc.strip() and not doc.startswith(f"{name}("), f"{name} has no docstring of its own"


def test_the_public_methods_of_exported_classes_are_documented() -> None:
    undocumented = [
        f"{name}.{attribute}"
        for name in mcp_subagents.__all__
        if inspect.isclass(cls := getattr(mcp_subagents, name))
        for attribute, member in vars(cls).items()
        if not attribute.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, property) or hasattr(member, "func"))
        and not inspect.getdoc(member)
    ]
    assert undocumented == []


def test_the_version_is_a_release_number() -> None:
    assert mcp_subagents.__version__.count(".") == 2
    assert all(part.isdigit() for part in mcp_subagents.__version__.split("."))


def test_the_docs_python_example_runs(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "python.md").read_text(encoding="utf-8")
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    run = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        env=server_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith('<task_result agent="Explore">Nothing to report.</task_result>\n<usage>task_id: ')


@pytest.mark.parametrize("package", ["mcp_subagents", "mcp_subagents.render", "mcp_subagents.tools"])
def test_every_member_of_a_package_loaded_on_first_use_resolves(package: str) -> None:
    """These packages name their members twice (for pyright, and for the runtime's loader): each listed member
    must load, in a fresh interpreter where nothing was imported before."""
    code = (
        "import importlib, sys\n"
        f"package = importlib.import_module({package!r})\n"
        "missing = []\n"
        "for name in package.__all__:\n"
        "    try:\n"
        "        getattr(package, name)\n"
        "    except AttributeError:\n"
        "        missing.append(name)\n"
        "print(missing)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "[]"
