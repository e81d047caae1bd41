"""`agents list` says whether the project is trusted and what says so, a remembered answer to the server's trust
question included, and where to take that answer back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_subagents.cli.commands import main
from mcp_subagents.config.trust_answers import TrustAnswers


def listing(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    with monkeypatch.context() as scoped:
        for name in list(os.environ):
            if name != "PATH":
                scoped.delenv(name)
        scoped.setenv("HOME", str(tmp_path))
        capsys.readouterr()
        main(["agents", "list", "--cwd", str(project)])
        return capsys.readouterr().out


def test_agents_list_says_how_the_project_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    answers = TrustAnswers(tmp_path / ".local" / "state" / "mcp-subagents" / "trust.json")
    untrusted = listing(tmp_path, project, monkeypatch, capsys)
    assert f"trust: the project {project} is not trusted: open it once in Claude Code" in untrusted

    answers.remember(project, trusted=False, at=0.0, by="ann", via="the dashboard")
    refused = listing(tmp_path, project, monkeypatch, capsys)
    assert f"trust: the project {project} is not trusted (you chose not to trust it on " in refused
    assert f"via the dashboard; this server remembers that in {answers.path}" in refused

    answers.remember(project, trusted=True, at=0.0, by="ann", via="the dashboard")
    trusted = listing(tmp_path, project, monkeypatch, capsys)
    assert f"trust: the project {project} is trusted: you said so when this server asked" in trusted
    assert "(remove the folder's entry there to take it back)" in trusted

    (tmp_path / ".claude.json").write_text(
        json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}), encoding="utf-8"
    )
    assert "trusted: Claude Code's record in" in listing(tmp_path, project, monkeypatch, capsys)
