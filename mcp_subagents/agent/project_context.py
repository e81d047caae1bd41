"""The project context Claude Code puts in a subagent's first message: its CLAUDE.md files and the git status.

CLAUDE.md files, in the order the model reads them (later ones are closer to the work, so they weigh more):
the managed policy's `CLAUDE.md` (next to `--policy-file`), the user's `~/.claude/CLAUDE.md`, then for each folder
from the filesystem root down to the working directory its `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/*.md`
and `CLAUDE.local.md`. `@path` imports are followed up to five levels deep; in project files they must stay inside
the folder of the file that started the chain, so a cloned repository cannot pull in `~/.ssh` or other private files.

The git status is read with the repository's code-running settings neutralised (fsmonitor, filter drivers,
signature checks), since anything inside the checkout, an agent included, can write `.git/config`.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

import anyio

from ..core.git import inside_git_checkout

logger = logging.getLogger(__name__)

InstructionKind: TypeAlias = Literal["managed", "user", "project", "local"]

MAX_FILE_CHARS: Final = 40_000
MAX_IMPORT_DEPTH: Final = 5
MAX_STATUS_CHARS: Final = 2_000
RECENT_COMMITS: Final = 5
GIT_TIMEOUT: Final = 5.0

_KIND_LABELS: Final[dict[InstructionKind, str]] = {
    "managed": "instructions set by the organization's policy",
    "user": "the user's own instructions, for every project",
    "project": "project instructions, committed with the code",
    "local": "the user's private instructions for this project, not committed",
}
CLAUDE_MD_INTRO: Final = (
    "Instructions from the user and from this codebase follow. IMPORTANT: they take precedence over your default "
    "behaviour; do exactly what they say."
)
_IMPORT: Final = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE: Final = re.compile(r"`[^`]*`")
_HTML_COMMENT: Final = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class InstructionFile:
    path: Path
    kind: InstructionKind
    content: str


def instruction_files(
    cwd: Path, *, claude_dir: Path | None = None, managed_dir: Path | None = None
) -> list[InstructionFile]:
    """Every CLAUDE.md-style file that applies to `cwd`, imports included, in reading order; unreadable ones are
    skipped."""
    collector = _Collector(home=claude_dir.parent if claude_dir is not None else None)
    if managed_dir is not None:
        collector.add(managed_dir / "CLAUDE.md", "managed", anchor=None)
    if claude_dir is not None:
        collector.add(claude_dir / "CLAUDE.md", "user", anchor=None)
    for folder in reversed((cwd, *cwd.parents)):
        # Most folders hold none of these: probed as strings, a Path is made only for what exists.
        name = os.fspath(folder).rstrip("/")
        if os.path.isfile(f"{name}/CLAUDE.md"):
            collector.add(folder / "CLAUDE.md", "project", anchor=folder)
        if os.path.isdir(f"{name}/.claude"):
            collector.add(folder / ".claude" / "CLAUDE.md", "project", anchor=folder)
            rules = folder / ".claude" / "rules"
            if rules.is_dir():
                for rule in sorted(rules.glob("*.md")):
                    collector.add(rule, "project", anchor=folder)
        if os.path.isfile(f"{name}/CLAUDE.local.md"):
            collector.add(folder / "CLAUDE.local.md", "local", anchor=folder)
    return collector.files


def claude_md_block(files: list[InstructionFile]) -> str | None:
    """The `<system-reminder>` block that carries the files, or None when there are none."""
    if not files:
        return None
    sections = [f"Contents of {f.path} ({_KIND_LABELS[f.kind]}):\n\n{f.content.strip()}" for f in files]
    return "<system-reminder>\n" + CLAUDE_MD_INTRO + "\n\n" + "\n\n".join(sections) + "\n</system-reminder>"


class _Collector:
    def __init__(self, home: Path | None) -> None:
        self.home = home
        self.files: list[InstructionFile] = []
        self._seen: set[Path] = set()

    def add(self, path: Path, kind: InstructionKind, *, anchor: Path | None, depth: int = 0) -> None:
        # Most places hold no such file: one stat says so, where resolving the path costs one per component.
        if not path.is_file():
            return
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return
        if real in self._seen or not real.is_file():
            return
        if anchor is not None and not real.is_relative_to(anchor.resolve()):
            logger.warning("instruction file %s points outside %s; not read", path, anchor)
            return
        content = _read_text(real)
        if content is None:
            return
        self._seen.add(real)
        if len(content) > MAX_FILE_CHARS:
            content = content[:MAX_FILE_CHARS] + f"\n[... cut: the file has {len(content)} characters]"
        self.files.append(InstructionFile(path=path, kind=kind, content=content))
        if depth >= MAX_IMPORT_DEPTH:
            return
        for target in _imports(content):
            resolved = self._import_path(target, path.parent)
            if resolved is not None:
                self.add(resolved, kind, anchor=anchor, depth=depth + 1)

    def _import_path(self, target: str, base: Path) -> Path | None:
        target = target.replace("\\ ", " ").rstrip(".,;:)")
        if target.startswith("~/"):
            return None if self.home is None else self.home / target[2:]
        if target.startswith("/"):
            return Path(target)
        if not re.match(r"[\w.~-]", target):
            return None
        return base / target


def _imports(content: str) -> list[str]:
    """`@path` references outside code blocks, inline code and HTML comments."""
    found: list[str] = []
    in_fence = False
    for line in _HTML_COMMENT.sub("", content).splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            found += _IMPORT.findall(_INLINE_CODE.sub("", line))
    return found


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        logger.warning("instruction file %s is not text; skipped", path)
        return None
    return data.decode("utf-8", errors="replace")


# ---- git status ---------------------------------------------------------------------------------------------------

GIT_STATUS_INTRO: Final = (
    "The repository's git status when this task started. It is a snapshot: it does not change while you work."
)
GIT_STATUS_OUTRO: Final = (
    "The server added this status on its own: it is not part of your task, and the user knows their workspace "
    "already, so leave it out of your report."
)
_SAFE_CONFIG: Final = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "log.showSignature=false",
    "color.ui=false",
    "core.quotePath=false",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GitStatus:
    branch: str
    main_branch: str
    status: str
    recent_commits: str
    user_name: str | None = None


@dataclass(eq=False, slots=True)
class _StatusInFlight:
    done: anyio.Event
    answered: bool = False
    status: GitStatus | None = None


_status_in_flight: dict[tuple[str, frozenset[tuple[str, str]]], _StatusInFlight] = {}


async def git_status(cwd: Path, env: dict[str, str]) -> GitStatus | None:
    """The status of the repository `cwd` is in; None outside a repository, without git, or when git fails.

    Calls for the same folder and environment while one is under way share its answer (nothing is kept once it
    is given): tasks a host launches together start one set of git processes instead of one each."""
    key = (str(cwd), frozenset(env.items()))
    while (flight := _status_in_flight.get(key)) is not None:
        await flight.done.wait()
        if flight.answered:
            return flight.status
    flight = _status_in_flight[key] = _StatusInFlight(anyio.Event())
    try:
        flight.status = await _read_git_status(cwd, env)
        flight.answered = True
        return flight.status
    finally:
        del _status_in_flight[key]
        flight.done.set()  # a caller cancelled half-way answers nobody: the next waiter asks git itself


async def _read_git_status(cwd: Path, env: dict[str, str]) -> GitStatus | None:
    if not any(name in env for name in _GIT_LOCATION_VARIABLES) and not inside_git_checkout(cwd):
        return None  # git would look for a `.git` there too and find none: a process less per Task
    git = _Git(cwd, env)
    try:
        if await git.run("rev-parse", "--is-inside-work-tree") != "true":
            return None
        await git.neutralise_filters()
        branch = await git.run("rev-parse", "--abbrev-ref", "HEAD") or "HEAD"
        status = await git.run("status", "--short", "--ignore-submodules=all")
        commits = await git.run("log", "--oneline", "--no-decorate", f"-n{RECENT_COMMITS}")
        main = await _main_branch(git, branch)
        user = await git.run("config", "user.name")
    except _GitFailed as failed:
        logger.info("no git status for %s: %s", cwd, failed)
        return None
    return GitStatus(
        branch=branch, main_branch=main, status=status or "", recent_commits=commits or "", user_name=user or None
    )


def git_status_block(status: GitStatus) -> str:
    text = status.status
    if len(text) > MAX_STATUS_CHARS:
        text = (
            text[:MAX_STATUS_CHARS]
            + f'\n... (cut: the status is longer than {MAX_STATUS_CHARS} characters; run "git status" with Bash '
            "to see all of it)"
        )
    parts = [
        "Context for your work, in case it helps:",
        "# gitStatus",
        GIT_STATUS_INTRO,
        "",
        f"Current branch: {status.branch}",
        "",
        f"Main branch (the usual target for pull requests): {status.main_branch}",
        "",
    ]
    if status.user_name:
        parts += [f"Git user: {status.user_name}", ""]
    parts += ["Status:", text or "(clean)", "", "Recent commits:", status.recent_commits or "(none)", ""]
    parts.append(GIT_STATUS_OUTRO)
    return "<system-reminder>\n" + "\n".join(parts) + "\n</system-reminder>"


_GIT_LOCATION_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE")
"""With these git finds a repository without a `.git` above the working directory."""


class _GitFailed(Exception):
    pass


class _Git:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.env = {
            **env,
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        self.config: list[str] = [part for item in _SAFE_CONFIG for part in ("-c", item)]

    async def run(self, *args: str) -> str | None:
        """Git's output without trailing white space; None when it exits non-zero.

        Raises:
            _GitFailed: git cannot be started, or takes longer than `GIT_TIMEOUT`.
        """
        command = ["git", "--no-pager", *self.config, *args]
        try:
            with anyio.fail_after(GIT_TIMEOUT):
                done = await anyio.run_process(
                    command, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, check=False
                )
        except (OSError, TimeoutError) as exc:
            raise _GitFailed(f"{' '.join(args)}: {exc}") from None
        if done.returncode != 0:
            return None
        return done.stdout.decode("utf-8", errors="replace").rstrip()

    async def neutralise_filters(self) -> None:
        """Blank every configured filter driver: `git status` would run a driver's `clean` command."""
        listed = await self.run("config", "--name-only", "--get-regexp", r"^filter\.") or ""
        names = {line.rsplit(".", 1)[0] for line in listed.splitlines() if line.count(".") >= 2}
        for name in sorted(names):
            for setting in ("clean=", "smudge=", "process=", "required=false"):
                self.config += ["-c", f"{name}.{setting}"]


async def _main_branch(git: _Git, current: str) -> str:
    remote_head = await git.run("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote_head:
        return remote_head.removeprefix("origin/")
    for candidate in ("main", "master"):
        if await git.run("show-ref", "--verify", "--quiet", f"refs/heads/{candidate}") is not None:
            return candidate
    return current
