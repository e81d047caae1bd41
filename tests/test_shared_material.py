"""The tests that read ../shared (the agent corpus, Claude Code captures) say where they looked when they skip, and
fail instead under MCP_SUBAGENTS_REQUIRE_CORPUS=1, as CI runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS_TESTS = "tests/definitions/test_corpus.py"


def run_corpus_tests(tmp_path: Path, *, require: bool) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if not key.startswith("MCP_SUBAGENTS_")}
    environ["MCP_SUBAGENTS_SHARED"] = str(tmp_path / "nowhere")
    if require:
        environ["MCP_SUBAGENTS_REQUIRE_CORPUS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", CORPUS_TESTS],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("require", [False, True])
def test_missing_corpus_skips_saying_where_or_fails_when_required(tmp_path: Path, require: bool) -> None:
    run = run_corpus_tests(tmp_path, require=require)
    where = f"agent corpus not found at {tmp_path / 'nowhere' / 'corpus' / 'wshobson-agents' / 'plugins'}"
    if require:
        assert run.returncode == 1, run.stdout
        assert f"{where}, and MCP_SUBAGENTS_REQUIRE_CORPUS=1 requires it" in run.stdout
        assert "6 errors" in run.stdout
    else:
        assert run.returncode == 0, run.stdout
        assert f"SKIPPED [1] {CORPUS_TESTS}" in run.stdout  # in the summary, as `-ra` (pyproject's addopts) shows
        assert f"{where}; set MCP_SUBAGENTS_REQUIRE_CORPUS=1 to fail instead of skipping" in run.stdout
        assert "6 skipped" in run.stdout
