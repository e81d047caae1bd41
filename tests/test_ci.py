"""What `.ci/run` promises: a type check that could not run fails CI, the shared reference material is required, and
the team tests get a scratch Postgres that is gone when CI ends."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.team.postgres import missing_postgres, postgres_bin_dir

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


def test_ci_starts_postgres_and_promises_it_to_the_tests_before_running_them() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    tests_start = ci.index("\npython -m pytest")
    assert ci.index("\nsource .ci/postgres\n") < ci.index("\ntrap stop_scratch_postgres EXIT\n")
    assert ci.index("\ntrap stop_scratch_postgres EXIT\n") < ci.index("\nstart_scratch_postgres\n") < tests_start
    assert ci.index("\nexport MCP_SUBAGENTS_REQUIRE_POSTGRES=1\n") < tests_start


def test_cis_postgres_serves_a_password_role_on_loopback_and_is_gone_when_ci_exits_on_a_failure() -> None:
    if postgres_bin_dir() is None:
        missing_postgres("no Postgres found (initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin)")
    script = """
        set -euo pipefail
        source .ci/postgres
        trap stop_scratch_postgres EXIT
        start_scratch_postgres
        echo "$PG_SCRATCH"
        echo "$MCP_SUBAGENTS_TEST_DATABASE_URL"
        "$(postgres_bin_dir)/psql" "$MCP_SUBAGENTS_TEST_DATABASE_URL" --no-psqlrc --tuples-only --no-align \
            --command="SELECT current_setting('listen_addresses'), rolcreatedb, rolsuper FROM pg_roles
                       WHERE rolname = current_user"
        exit 3
    """
    run = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 3, run.stderr
    folder, url, settings = run.stdout.splitlines()
    assert url.startswith("postgresql://mcp_subagents_test:") and "@127.0.0.1:" in url
    assert settings == "127.0.0.1|t|f"
    assert not Path(folder).exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5).close()
