"""The person's answers to the server's trust question, remembered in the state directory: read back by a new
server, counted by `ProjectTrust` (yes trusts, no only stops the asking), undone by removing the entry."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mcp_subagents.config.trust import ProjectTrust
from mcp_subagents.config.trust_answers import TrustAnswers
from mcp_subagents.core.errors import ConfigError


def folders(tmp_path: Path) -> tuple[Path, Path]:
    yes, no = tmp_path / "yes", tmp_path / "no"
    yes.mkdir()
    no.mkdir()
    return yes, no


def test_answers_are_kept_privately_and_a_new_server_reads_them(tmp_path: Path) -> None:
    yes, no = folders(tmp_path)
    path = tmp_path / "state" / "trust.json"
    answers = TrustAnswers(path)
    answers.remember(yes, trusted=True, at=1.0, by="ann", via="the dashboard")
    answers.remember(no, trusted=False, at=2.0, by=None, via=None)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    fresh = ProjectTrust(None, answers=TrustAnswers(path))
    assert fresh.is_trusted(yes) and not fresh.is_trusted(no)
    answer = fresh.answer(no)
    assert answer is not None and not answer.trusted and answer.at == 2.0
    assert json.loads(path.read_text(encoding="utf-8"))["folders"][str(yes)] == {
        "trusted": True,
        "at": 1.0,
        "by": "ann",
        "via": "the dashboard",
    }


def test_a_remembered_no_is_named_with_how_to_be_asked_again_and_the_three_ways(tmp_path: Path) -> None:
    _, no = folders(tmp_path)
    path = tmp_path / "trust.json"
    trust = ProjectTrust(tmp_path / ".claude.json", answers=TrustAnswers(path))
    assert "chose not to trust" not in trust.why_untrusted(no)
    TrustAnswers(path).remember(no, trusted=False, at=0.0, by="ann", via="the host's permission form")
    why = trust.why_untrusted(no)
    assert f"the project {no} is not trusted (you chose not to trust it on " in why
    assert f"via the host's permission form; this server remembers that in {path}" in why
    assert "until its entry there is removed" in why
    assert "accept the trust dialog" in why and "hasTrustDialogAccepted: true" in why and "--trust-project" in why


def test_forgetting_an_answer_lets_the_server_ask_again(tmp_path: Path) -> None:
    yes, no = folders(tmp_path)
    answers = TrustAnswers(tmp_path / "trust.json")
    answers.remember(yes, trusted=True, at=0.0, by=None, via=None)
    answers.remember(no, trusted=False, at=0.0, by=None, via=None)
    assert answers.forget(yes) and not answers.forget(yes)
    assert answers.get(yes) is None and answers.get(no) is not None
    assert not ProjectTrust(None, answers=answers).is_trusted(yes)


def test_an_answer_holds_for_the_folder_by_any_path(tmp_path: Path) -> None:
    yes, _ = folders(tmp_path)
    (tmp_path / "link").symlink_to(yes)
    answers = TrustAnswers(tmp_path / "trust.json")
    answers.remember(tmp_path / "link", trusted=True, at=0.0, by=None, via=None)
    assert answers.get(yes) is not None
    assert ProjectTrust(None, answers=answers).is_trusted(yes)


def test_an_answer_the_file_cannot_take_holds_until_the_server_stops_and_the_file_is_left_alone(
    tmp_path: Path,
) -> None:
    yes, _ = folders(tmp_path)
    path = tmp_path / "trust.json"
    path.write_text("[not, an, object", encoding="utf-8")
    path.chmod(0o600)
    answers = TrustAnswers(path)
    with pytest.raises(ConfigError, match="not valid JSON"):
        answers.remember(yes, trusted=True, at=0.0, by=None, via=None)
    assert path.read_text(encoding="utf-8") == "[not, an, object"
    assert ProjectTrust(None, answers=answers).is_trusted(yes)
    assert not ProjectTrust(None, answers=TrustAnswers(path)).is_trusted(yes)  # another process: not remembered


def test_a_file_others_may_write_is_no_answer_and_is_not_written(tmp_path: Path) -> None:
    yes, _ = folders(tmp_path)
    path = tmp_path / "trust.json"
    planted = json.dumps({"folders": {str(yes): {"trusted": True, "at": 0}}})
    path.write_text(planted, encoding="utf-8")
    path.chmod(0o644)  # as git checks a file out
    answers = TrustAnswers(path)
    assert answers.get(yes) is None and not ProjectTrust(None, answers=answers).is_trusted(yes)
    with pytest.raises(ConfigError, match=r"may be read or changed by others \(mode 644\)"):
        answers.remember(yes, trusted=False, at=0.0, by=None, via=None)
    assert path.read_text(encoding="utf-8") == planted
