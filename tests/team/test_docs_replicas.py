"""docs/replicas.md, followed step by step: its `sh` blocks run in order in one shell (a Postgres of its own in a
scratch folder, a database, three replicas, a real client, Claude Code, connecting to the first, the clean-up),
with free ports in `PGPORT` and `PORTS` as the page allows, and a scratch project and home."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import CHECKOUT
from tests.team.postgres import free_port, missing_postgres, postgres_bin_dir

PAGE = CHECKOUT / "docs" / "replicas.md"
CLAUDE = CHECKOUT / ".ci-node" / "node_modules" / ".bin" / "claude"
"""A step of the page that needs `tasks list --database-url`, which is not in this version yet."""


def sh_blocks(page: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", page, flags=re.DOTALL)


SHOW_LOGS = 'set +eu; tail -n 30 "$PGDIR"/replica-*.log || true\n'
"""What the replicas said (before the clean-up removes their logs): why one did not start, when one did not. The
clean-up goes on past a failed step (a replica already gone)."""


def script_of(blocks: list[str]) -> str:
    """The page's steps as one script: each announced, the last (the clean-up) run on exit whatever happens."""
    *steps, clean_up = blocks
    lines = ["set -eu", "trap 'exit 143' TERM", f"trap {shell_quote(SHOW_LOGS + clean_up)} EXIT"]
    for number, step in enumerate(steps, 1):
        lines.append(f"echo '== step {number}'")
        lines.append(step)
    lines.append("echo '== done'")
    return "\n".join(lines) + "\n"


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


WRAPPER = """#!/bin/sh
# {name} refuses root: run it as the postgres user, who gets the folder the cluster's data goes in
for arg; do case "$arg" in --pgdata=*) chown postgres: "$(dirname "${{arg#--pgdata=}}")";; esac; done
exec runuser -u postgres -- {path} "$@"
"""


def postgres_tools(bin_dir: Path, folder: Path) -> Path:
    """Where the page finds initdb and pg_ctl: Postgres's own folder, or under root wrappers that run them as the
    `postgres` user (as a normal user runs the page)."""
    if os.geteuid() != 0:
        return bin_dir
    folder.mkdir()
    for name in ("initdb", "pg_ctl"):
        (folder / name).write_text(WRAPPER.format(name=name, path=bin_dir / name), encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


def test_the_replicas_page_runs_as_written(tmp_path: Path) -> None:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        missing_postgres("no Postgres found (initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin)")
    if not CLAUDE.exists():
        pytest.skip(f"no Claude Code at {CLAUDE} (.ci/run installs it)")
    blocks = sh_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 6, blocks  # Postgres, the database, the replicas, the client, tasks list, the clean-up
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (tmp_path / "page.sh").write_text(script_of(blocks), encoding="utf-8")
    tools = postgres_tools(bin_dir, tmp_path / "postgres-tools")
    environ = {
        "HOME": str(home),
        "PATH": f"{tools}:{Path(sys.executable).parent}:{CLAUDE.parent}:/usr/sbin:/usr/bin:/sbin:/bin",
        "PGPORT": str(free_port()),
        "PORTS": " ".join(str(free_port()) for _ in range(3)),
        "PROJECT": str(project),
        "MCP_SUBAGENTS_NO_WARM": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    done = subprocess.run(
        ["timeout", "120", "bash", str(tmp_path / "page.sh")],  # stopped, the script still cleans up
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "== done" in done.stdout, said
    assert re.search(r"subagents: http://127\.0\.0\.1:\d+/mcp \(HTTP\) - [✓✔] Connected", done.stdout), said
    assert "No tasks in the team's database." in done.stdout, said  # the team's tasks, read from any replica's machine
