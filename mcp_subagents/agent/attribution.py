"""The commit-attribution reminder: for an agent with Bash, Claude Code adds to its first message how to credit the
work in commit messages and pull requests, as the person's settings say (`attribution`, or the older
`includeCoAuthoredBy`)."""

from __future__ import annotations

from typing import Final

from ..config.claude_settings import Credit
from ..models.profiles import ModelProfile

DEFAULT_PR_CREDIT: Final = "🤖 Generated with [Claude Code](https://claude.com/claude-code)"
"""Claude Code's own default line for a pull request, which its `attribution.pr` setting replaces."""

ATTRIBUTION_INTRO: Final = (
    "How to credit your work in git from now on. This note replaces any earlier note of its kind. Instructions "
    "the person gave (a CLAUDE.md, a remembered rule) about these lines come first; but never add a credit line "
    "that this note does not give."
)


def default_commit_credit(profile: ModelProfile) -> str:
    """Claude Code's default commit trailer, naming the model the agent runs on; none for a model that is not
    Claude (the trailer would be false)."""
    if profile.display_name is not None and profile.model_id.startswith("claude"):
        return f"Co-Authored-By: Claude {profile.display_name} <noreply@anthropic.com>"
    if profile.model_id.startswith("claude"):
        return "Co-Authored-By: Claude <noreply@anthropic.com>"
    return ""


def attribution_block(credit: Credit, profile: ModelProfile) -> str | None:
    """The `<system-reminder>` with the lines to end commits and pull requests with; None when the settings leave
    both out."""
    commit = default_commit_credit(profile) if credit.commit is None else credit.commit
    pr = DEFAULT_PR_CREDIT if credit.pr is None else credit.pr
    lines = [ATTRIBUTION_INTRO]
    if commit.strip():
        lines += ["- Finish every git commit message with:", commit]
    if pr.strip():
        lines += ["- Finish every pull request description with:", pr]
    if len(lines) == 1:
        return None
    return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>"
