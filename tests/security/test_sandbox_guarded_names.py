"""Attacks: a sandboxed command writes something that a program outside the sandbox runs or obeys later.

Before the fix only `.git/config`, `.git/hooks` and a handful of names at the top of the project were read-only. A
command could rename `.git` and write a new one, point `.git/commondir` at a copy with `core.fsmonitor`, edit a
nested repository's, a bare repository's or a submodule's config, write `.agents/agents/x.md`, `CLAUDE.md` or
`.vscode/tasks.json`: the person's next `git status` (IDEs run it all the time), their editor, Claude Code or this
server's next Task then ran or obeyed it, unconfined. Each test below was checked to succeed against 74f4b0f.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.core.environment import scrubbed_environment
from mcp_subagents.core.errors import ToolError
from mcp_subagents.sandbox import SandboxRuntime, parse_sandbox_config
from mcp_subagents.tools import ToolContext, builtin_tools

from .conftest import requires_bwrap

pytestmark = [pytest.mark.anyio, requires_bwrap]

PLANT_FSMONITOR = "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > {config}"


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the person runs it later, outside any sandbox."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)


def make_repo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    (folder / "tracked.txt").write_text("tracked\n")
    git(folder, "add", "tracked.txt")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return folder


@pytest.fixture
def project(host_tmp: Path) -> Path:
    home = host_tmp / "home"
    home.mkdir()
    return make_repo(home / "project")


@asynccontextmanager
async def bash_in(project: Path, block: dict[str, Any] | None = None) -> AsyncGenerator[Any]:
    home = project.parent
    state = home / ".local" / "state" / "mcp-subagents"
    runtime = SandboxRuntime(parse_sandbox_config(block), state_dir=state, home=home)
    sandbox = runtime.for_run(cwd=project, roots=(project,))
    assert sandbox is not None
    env = scrubbed_environment(os.environ) | {"HOME": str(home)}
    ctx = ToolContext(cwd=project, allowed_roots=(project,), env=env, sandbox=sandbox)
    bash = builtin_tools()["Bash"]

    async def run(command: str) -> str:
        with anyio.fail_after(30):
            try:
                return await bash.run(ctx, bash.validate({"command": command}))
            except ToolError as exc:
                return f"FAILED: {exc.message}"

    try:
        yield run
    finally:
        sandbox.close()
        runtime.close()


def fsmonitor_ran(repository: Path, marker: Path) -> bool:
    """Whether the person's next `git status` in `repository` runs a planted fsmonitor."""
    git(repository, "status", "--short")
    return marker.exists()


async def test_renaming_git_and_writing_a_new_one_fails(project: Path) -> None:
    marker = project.parent / "renamed-git-ran"
    plant = PLANT_FSMONITOR.format(marker=marker, config=".git/config")
    async with bash_in(project) as run:
        result = await run(f"mv .git .git-old && mkdir .git && cp -r .git-old/. .git/ && {plant}")
    assert "FAILED" in result
    assert not (project / ".git-old").exists()
    assert not fsmonitor_ran(project, marker)


async def test_commondir_cannot_point_git_at_another_repository(project: Path) -> None:
    marker = project.parent / "commondir-ran"
    async with bash_in(project) as run:
        copied = await run(f"cp -r .git copy && {PLANT_FSMONITOR.format(marker=marker, config='copy/config')}")
        result = await run("echo ../copy > .git/commondir")
    assert "FAILED" in result and not (project / ".git" / "commondir").exists()
    assert "FAILED" not in copied  # an ordinary folder of the project may be written
    assert not fsmonitor_ran(project, marker)


async def test_nested_bare_and_submodule_repositories_stay_read_only(project: Path) -> None:
    nested = make_repo(project / "vendor" / "lib")
    bare = project / "vendor.git"
    git(project, "clone", "-q", "--bare", str(nested), str(bare))
    (project / ".git" / "modules" / "sub").mkdir(parents=True)
    git(project, "clone", "-q", "--bare", str(nested), str(project / ".git" / "modules" / "sub"))
    (project / "sub").mkdir()
    (project / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    marker = project.parent / "nested-ran"
    async with bash_in(project) as run:
        results = [
            await run(PLANT_FSMONITOR.format(marker=marker, config="vendor/lib/.git/config")),
            await run(PLANT_FSMONITOR.format(marker=marker, config="vendor.git/config")),
            await run(PLANT_FSMONITOR.format(marker=marker, config=".git/modules/sub/config")),
            await run("echo 'gitdir: ../elsewhere' > sub/.git"),
        ]
    assert all("FAILED" in result for result in results), results
    assert not fsmonitor_ran(nested, marker)
    assert (project / "sub" / ".git").read_text() == "gitdir: ../.git/modules/sub\n"
    assert "fsmonitor" not in (bare / "config").read_text()


OBEYED_LATER = (".agents/agents/x.md", "CLAUDE.md", "CLAUDE.local.md", ".envrc", ".vscode/tasks.json",
                ".idea/workspace.xml", ".husky/pre-commit", ".pre-commit-config.yaml", "AGENTS.md",
                ".claude/rules/style.md", "docs/CLAUDE.md")  # fmt: skip


async def test_files_that_editors_hosts_and_direnv_obey_stay_read_only(project: Path) -> None:
    for name in OBEYED_LATER:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("original\n")
    async with bash_in(project) as run:
        results = {name: await run(f"echo planted > {name}") for name in OBEYED_LATER}
        renamed = await run("mv .vscode vscode-old && mkdir .vscode && echo planted > .vscode/tasks.json")
    for name, result in results.items():
        assert "FAILED" in result, name
        assert (project / name).read_text() == "original\n", name
    assert "FAILED" in renamed and (project / ".vscode" / "tasks.json").read_text() == "original\n"


async def test_what_a_command_creates_among_those_names_does_not_stay(project: Path) -> None:
    marker = project.parent / "new-nested-ran"
    (project / "src").mkdir()
    async with bash_in(project) as run:
        top = await run("echo planted > CLAUDE.md; echo planted > .envrc; mkdir -p .agents/agents; true")
        nested = await run(
            "git init -q src/inner && git -C src/inner config core.fsmonitor 'touch "
            f"{marker}' && echo planted > src/CLAUDE.md && mkdir -p docs/.vscode && echo x > docs/.vscode/tasks.json"
            " && echo made"
        )
        ordinary = await run("mkdir -p build && echo ok > build/out.txt && cat build/out.txt")
    for name in ("CLAUDE.md", ".envrc", ".agents", "src/inner/.git", "src/CLAUDE.md", "docs/.vscode"):
        assert not (project / name).exists(), name
    assert "made" in nested and "moved out of the project" in nested and "src/inner/.git" in nested
    assert "FAILED" not in ordinary and (project / "build" / "out.txt").read_text() == "ok\n"
    assert not fsmonitor_ran(project / "src" / "inner", marker)
    assert "FAILED" in top or "moved out of the project" in top


async def test_a_project_without_mcp_json_still_greps(project: Path) -> None:
    (project / "notes.txt").write_text("needle\n")
    async with bash_in(project) as run:
        result = await run("grep -r needle . ; echo exit=$?")
    assert "./notes.txt:needle" in result and "exit=0" in result
    assert not (project / ".mcp.json").exists()


async def test_what_gits_configuration_runs_from_the_working_tree_stays_read_only(project: Path) -> None:
    """A repository that keeps its hooks in the working tree (`core.hooksPath`, as husky and many projects set it),
    includes a config file from it, or names a program there: a command that changes those files has git run its
    code at the person's next commit or status."""
    marker = project.parent / "configured-ran"
    (project / ".githooks").mkdir()
    (project / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (project / "tools").mkdir()
    (project / "tools" / "fsmonitor.sh").write_text("#!/bin/sh\nexit 0\n")
    (project / "tools" / "fsmonitor.sh").chmod(0o755)
    (project / ".gitconfig.shared").write_text("[core]\n\tfsmonitor = ./tools/fsmonitor.sh\n")
    git(project, "config", "core.hooksPath", ".githooks")
    git(project, "config", "include.path", "../.gitconfig.shared")
    async with bash_in(project) as run:
        results = [
            await run(f"echo 'touch {marker}' >> .githooks/pre-commit"),
            await run(f"printf '#!/bin/sh\\ntouch {marker}\\n' > tools/fsmonitor.sh"),
            await run(PLANT_FSMONITOR.format(marker=marker, config=".gitconfig.shared")),
            await run(f"printf '#!/bin/sh\\ntouch {marker}\\n' > .githooks/post-checkout; chmod +x .githooks/*"),
        ]
    assert all("FAILED" in result for result in results), results
    assert not fsmonitor_ran(project, marker)
    assert not (project / ".githooks" / "post-checkout").exists()
