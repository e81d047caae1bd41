"""`isolation: worktree`: an agent works in its own git worktree, as Claude Code gives it one.

The worktree is `<repository>/.claude/worktrees/agent-<id>` on a new branch `worktree-agent-<id>`, made from the
current commit (HEAD) and locked while the agent runs. Afterwards it is kept, with its branch, when the agent changed
something (a commit, an edited or a new file) and removed with its branch when it did not.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..core.errors import WorktreeError

logger = logging.getLogger(__name__)

WORKTREES_FOLDER = Path(".claude") / "worktrees"
GIT_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Worktree:
    path: Path
    """The worktree's root."""
    cwd: Path
    """Where the agent works: the same place inside the worktree as the project folder is inside the repository."""
    branch: str
    base: str
    """The commit it was made from."""
    repository: Path
    """The main checkout, whose git runs the worktree commands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeReport:
    """What became of a worktree once its agent finished: kept (something changed) or removed."""

    path: str
    branch: str
    kept: bool
    changed_files: tuple[str, ...] = ()
    problem: str = ""
    """Set when git failed while finishing; the worktree is then left as it is."""


async def create_worktree(cwd: Path, name: str, env: Mapping[str, str]) -> Worktree:
    """Make and lock a worktree for the agent `name` (a short unique id) of the repository holding `cwd`.

    Raises:
        WorktreeError: `cwd` is not in a git repository, the repository has no commit yet, or git failed.
    """
    environment = _git_environment(env)
    where = ["rev-parse", "--show-toplevel", "--show-prefix", "--path-format=absolute", "--git-common-dir"]
    found = await _git(cwd, where, environment)
    if found.code != 0:
        raise WorktreeError(
            f"isolation: worktree needs a git repository, and {cwd} is not inside one "
            f"({found.error or 'git rev-parse failed'}). Run the agent without isolation, or from a repository."
        )
    toplevel, inside, common = found.out.split("\n")[:3]
    toplevel, common = Path(toplevel), Path(common)
    repository = common.parent if common.name == ".git" else toplevel
    head = await _git(cwd, ["rev-parse", "--verify", "HEAD^{commit}"], environment)
    if head.code != 0:
        raise WorktreeError(f"isolation: worktree needs a commit to start from, and {toplevel} has none yet.")
    base = head.out.strip()
    path = repository / WORKTREES_FOLDER / f"agent-{name}"
    branch = f"worktree-agent-{name}"
    added = await _git(repository, ["worktree", "add", "-b", branch, str(path), base], environment)
    if added.code != 0:
        raise WorktreeError(f"Could not create the worktree {path}: {added.error or 'git worktree add failed'}")
    reason = f"mcp-subagents: agent {name} is working here"
    locked = await _git(repository, ["worktree", "lock", "--reason", reason, str(path)], environment)
    if locked.code != 0:
        logger.warning("could not lock worktree %s: %s", path, locked.error)
    agent_cwd = path / inside if inside and await anyio.Path(path / inside).is_dir() else path
    return Worktree(path=path, cwd=agent_cwd, branch=branch, base=base, repository=repository)


async def finish_worktree(worktree: Worktree, env: Mapping[str, str]) -> WorktreeReport:
    """Unlock the worktree; keep it when the agent changed something, else remove it and its branch.

    Never raises: a git failure leaves the worktree in place and says so in the report.
    """
    environment = _git_environment(env)
    reports: list[WorktreeReport] = []
    with anyio.CancelScope(shield=True):  # runs while a stopped task unwinds: the cleanup must finish
        reports.append(await _settle(worktree, environment))
    return reports[0]


async def _settle(worktree: Worktree, environment: Mapping[str, str]) -> WorktreeReport:
    await _git(worktree.repository, ["worktree", "unlock", str(worktree.path)], environment)
    try:
        changed = await _changed_files(worktree, environment)
    except WorktreeError as exc:
        return _report(worktree, kept=True, problem=exc.message)
    if changed:
        return _report(worktree, kept=True, changed=changed)
    removed = await _git(worktree.repository, ["worktree", "remove", "--force", str(worktree.path)], environment)
    if removed.code != 0:
        return _report(worktree, kept=True, problem=f"git worktree remove failed: {removed.error}")
    deleted = await _git(worktree.repository, ["branch", "-D", worktree.branch], environment)
    if deleted.code != 0:
        logger.warning("could not delete branch %s: %s", worktree.branch, deleted.error)
    return _report(worktree, kept=False)


async def _changed_files(worktree: Worktree, env: Mapping[str, str]) -> tuple[str, ...]:
    """Files that differ from the base commit (committed or not) and new files git does not ignore."""
    where = worktree.path
    diff = await _git(where, ["diff", "--name-only", "-z", worktree.base], env)
    new = await _git(where, ["ls-files", "--others", "--exclude-standard", "-z"], env)
    commits = await _git(where, ["rev-list", "--count", f"{worktree.base}..HEAD"], env)
    for step in (diff, new, commits):
        if step.code != 0:
            raise WorktreeError(f"git could not tell what changed in {where}: {step.error}")
    files = {name for name in (*diff.out.split("\0"), *new.out.split("\0")) if name}
    if not files and commits.out.strip() not in ("", "0"):
        # Commits that changed nothing in the end (a change and its revert) still count as work to keep.
        files.add("(commits only)")
    return tuple(sorted(files))


def _report(worktree: Worktree, *, kept: bool, changed: Sequence[str] = (), problem: str = "") -> WorktreeReport:
    return WorktreeReport(
        path=str(worktree.path), branch=worktree.branch, kept=kept, changed_files=tuple(changed), problem=problem
    )


@dataclass(frozen=True, slots=True)
class _GitResult:
    code: int
    out: str
    error: str


async def _git(cwd: Path, arguments: Sequence[str], env: Mapping[str, str]) -> _GitResult:
    command = ["git", "-c", "core.fsmonitor=false", *arguments]
    try:
        with anyio.fail_after(GIT_TIMEOUT_S):
            done = await anyio.run_process(command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, check=False)
    except (OSError, TimeoutError) as exc:
        return _GitResult(1, "", str(exc))
    error = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return _GitResult(done.returncode, done.stdout.decode("utf-8", errors="replace"), error[-1] if error else "")


def _git_environment(env: Mapping[str, str]) -> dict[str, str]:
    environment = dict(env)
    environment.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
    environment["GIT_TERMINAL_PROMPT"] = "0"
    environment["LC_ALL"] = "C"
    return environment
