"""The subagent's system prompt: the definition body, an environment block and the critical reminder."""

from __future__ import annotations

import datetime as dt
import platform
from pathlib import Path

SUBAGENT_NOTES = """\
Notes:
- You are a subagent: your final message is returned as your whole report to the agent that launched you, who \
cannot see anything else you did. Make it complete and self-contained.
- In your final report, share the absolute file paths relevant to the task and include code snippets only when \
the exact text matters.
- Use absolute paths in tool calls; the working directory is given below."""


def _is_git_repo(cwd: Path) -> bool:
    return any((directory / ".git").exists() for directory in (cwd, *cwd.parents))


def environment_block(cwd: Path, *, today: dt.date | None = None) -> str:
    today = today or dt.date.today()
    return (
        "<env>\n"
        f"Working directory: {cwd}\n"
        f"Is directory a git repo: {'Yes' if _is_git_repo(cwd) else 'No'}\n"
        f"Platform: {platform.system().lower()}\n"
        f"OS Version: {platform.system()} {platform.release()}\n"
        f"Today's date: {today.isoformat()}\n"
        "</env>"
    )


def system_prompt(body: str, *, cwd: Path, critical_reminder: str | None = None, today: dt.date | None = None) -> str:
    sections = [body.strip(), SUBAGENT_NOTES, environment_block(cwd, today=today)]
    if critical_reminder and critical_reminder.strip():
        sections.append(f"<critical_reminder>\n{critical_reminder.strip()}\n</critical_reminder>")
    return "\n\n".join(s for s in sections if s)
