"""What the read-only pieces of a Bash command read, judged by the Read rules and the allowed directories.

A read-only command runs without asking only when every file it names is inside the allowed directories (or
covered by a Read allow rule), and no Read deny or ask rule could match a file inside a folder it searches. A Read
deny rule that matches a file the command names denies the command; a Read ask rule asks. As in Claude Code this
covers the files a command names: a program the check cannot read is not judged by it.

Two checks look at the filesystem for what the command line cannot show: git must find the project's own
repository from where it runs (a nested repository or a bare one carried as plain files brings its own
configuration, and with it programs git runs), and a program that follows the links inside folders it compares
(`diff dir1 dir2`) may be given files only.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.glob_root import glob_root
from .bash import SimpleCommand, command_start, program_name
from .context import PermissionPolicy, first_rule, path_suggestion
from .patterns import PathPattern
from .read_only import Reads, read_only
from .targets import PathTarget, TargetError, absolute_path, is_inside, path_target
from .verdict import Verdict

_MAX_GLOB_MATCHES = 2000
_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})


@dataclass(frozen=True, slots=True)
class ReadCheck:
    verdict: Verdict | None = None
    """deny or ask: a Read rule matches a file the command reads."""
    runs_unasked: tuple[bool, ...] = ()
    """Per piece: read-only, and everything it reads is where it may read without asking."""
    first_problem: tuple[str, str] | None = None
    """(why, suggested rule) for the first read-only piece that still needs approval."""


def check_reads(policy: PermissionPolicy, subject: str, pieces: tuple[SimpleCommand, ...]) -> ReadCheck:
    bases = [str(policy.cwd)]
    known = True
    verdict: Verdict | None = None
    runs_unasked: list[bool] = []
    first_problem: tuple[str, str] | None = None
    for piece in pieces:
        reads = read_only(piece)
        if reads is None:
            runs_unasked.append(False)
            known = known and not _changes_directory(piece)
            continue
        judged = _judge(policy, subject, reads, bases if known else None)
        if judged.verdict is not None and (verdict is None or _stricter(judged.verdict, verdict)):
            verdict = judged.verdict
        runs_unasked.append(judged.problem is None and judged.verdict is None)
        first_problem = first_problem or judged.problem
        if reads.moves_to is not None:
            bases += [path for base in bases for path in _absolute(policy, reads.moves_to, base)]
    return ReadCheck(verdict=verdict, runs_unasked=tuple(runs_unasked), first_problem=first_problem)


def _changes_directory(piece: SimpleCommand) -> bool:
    """`cd`, `pushd`, `popd`, also behind `builtin` or `command`: later relative paths are then unknown."""
    values = piece.values[command_start(piece.values) :]
    return bool(values) and program_name(values[0]) in _DIRECTORY_CHANGERS


@dataclass(frozen=True, slots=True)
class _Judged:
    verdict: Verdict | None
    problem: tuple[str, str] | None


def _judge(policy: PermissionPolicy, subject: str, reads: Reads, bases: list[str] | None) -> _Judged:
    problem: tuple[str, str] | None = None
    for written in reads.files:
        if bases is None and not _anchored(written):
            problem = problem or (f"reads '{written}' after changing to a folder only known when it runs", "Bash")
            continue
        for base in bases or [str(policy.cwd)]:
            for path in _absolute(policy, written, base):
                judged = _judge_path(policy, subject, path, reads)
                if judged.verdict is not None:
                    return judged
                problem = problem or judged.problem
    for written in reads.trees:
        for base in bases or [str(policy.cwd)]:
            for folder in _absolute(policy, written, base, expand=False):
                rule = _rule_reaching_into(policy, folder)
                if rule is not None:
                    why = f"searches {folder}, where {rule} could match files"
                    problem = problem or (why, "Bash")
    return _Judged(None, problem or _repository_problem(policy, reads, bases))


def _judge_path(policy: PermissionPolicy, subject: str, path: str, reads: Reads) -> _Judged:
    target = _target(policy, path)
    if target is None:
        return _Judged(None, (f"reads '{path}', which cannot be checked", "Bash"))
    for rule_list in ("deny", "ask"):
        rule = first_rule(policy, rule_list, "Read", target, None)
        if rule is not None:
            reason = f"{subject} reads {path}, which matches {rule.where(rule_list)}."
            return _Judged(Verdict(rule_list, reason, rule.text), None)
    if not is_inside(target, policy.allowed_roots) and first_rule(policy, "allow", "Read", target, None) is None:
        return _Judged(
            None, (f"reads {path}, outside the allowed directories", path_suggestion(policy, "Read", target, None))
        )
    if reads.follows_links and os.path.isdir(path):
        why = f"compares the folder {path}, following the symbolic links inside it wherever they point"
        return _Judged(None, (why, "Bash"))
    return _Judged(None, None)


def _repository_problem(policy: PermissionPolicy, reads: Reads, bases: list[str] | None) -> tuple[str, str] | None:
    """Git run where it finds another repository than the project's own: a nested one, or a bare one carried as
    plain files, whose configuration (`core.fsmonitor`, a pager, a diff driver) git would obey."""
    written = reads.repository_from
    if written is None:
        return None
    if bases is None and not _anchored(written):
        return (f"runs git from '{written}' after changing to a folder only known when it runs", "Bash")
    own = find_repository(policy.cwd)
    for base in bases or [str(policy.cwd)]:
        for folder in _absolute(policy, written, base, expand=False):
            found = find_repository(Path(folder))
            if not _same_repository(found, own):
                where = "no repository" if found is None else f"the repository at {found.git_dir}"
                why = (
                    f"runs git in {folder}, where git finds {where}, not the project's own: git would obey that "
                    "repository's configuration, which can name programs to run"
                )
                return (why, "Bash")
    return None


def _same_repository(found: Repository | None, own: Repository | None) -> bool:
    """Whether git finds the project's own repository (inside its git directory too), or, like from the project,
    none. A project that is itself a bare-looking folder has no repository of its own to trust."""
    if found is None or own is None:
        return found is None and own is None
    return found.git_dir == own.git_dir and not own.bare


@dataclass(frozen=True, slots=True)
class Repository:
    git_dir: str
    """The git directory, symlinks resolved."""
    bare: bool
    """Found as a folder that is itself a git directory rather than through a `.git` entry."""


def find_repository(start: Path) -> Repository | None:
    """The repository git discovers from `start`, as git walks up: the first folder with a `.git` entry (a folder,
    or a file naming one), or that is itself a git directory. Any folder holding `HEAD` counts as one: what git would
    take for a git directory must not be missed, and a false match only costs a question."""
    folder = Path(os.path.realpath(start))
    while True:
        entry = folder / ".git"
        if os.path.lexists(entry):
            return Repository(git_dir=_git_dir_of(entry), bare=False)
        if os.path.lexists(folder / "HEAD"):
            return Repository(git_dir=str(folder), bare=True)
        if folder.parent == folder:
            return None
        folder = folder.parent


def _git_dir_of(entry: Path) -> str:
    """The git directory a `.git` entry stands for: itself, or what its `gitdir:` line names."""
    if entry.is_file():
        try:
            line = entry.read_text(encoding="utf-8", errors="replace").splitlines()[0]
        except (OSError, IndexError):
            return str(entry)
        if line.startswith("gitdir:"):
            return os.path.realpath(os.path.join(entry.parent, line.removeprefix("gitdir:").strip()))
    return os.path.realpath(entry)


def _stricter(new: Verdict, old: Verdict) -> bool:
    return new.decision == "deny" and old.decision != "deny"


def _anchored(written: str) -> bool:
    return os.path.isabs(written) or written == "~" or written.startswith("~/")


def _absolute(policy: PermissionPolicy, written: str, base: str, *, expand: bool = True) -> list[str]:
    """The absolute path, and for a glob also what it matches now (hidden names left out, as bash does)."""
    try:
        path = absolute_path(written, cwd=Path(base), home=policy.home)
    except TargetError:
        return []
    if not expand or not glob.has_magic(path):
        return [path]
    matches = glob.glob(path)
    if len(matches) > _MAX_GLOB_MATCHES:
        # Too many to check each against the rules: the folder, and every match that leads elsewhere.
        return [path, os.path.dirname(path), *(match for match in matches if os.path.islink(match))]
    return [path, *matches]


def _target(policy: PermissionPolicy, path: str) -> PathTarget | None:
    try:
        return path_target("Read", {"file_path": path}, cwd=policy.cwd, home=policy.home)
    except TargetError:
        return None


def _rule_reaching_into(policy: PermissionPolicy, folder: str) -> str | None:
    """A Read deny or ask rule that could match some file inside `folder`, as written in its settings file."""
    forms = {folder, os.path.realpath(folder)}
    for rule_list in ("deny", "ask"):
        for rule in policy.rules.listed(rule_list):
            if not rule.applies_to("Read"):
                continue
            matcher = rule.matcher
            if rule.specifier is None or not isinstance(matcher, PathPattern):
                return rule.where(rule_list)
            for root in _pattern_roots(policy, matcher):
                if any(_overlap(root, form) for form in forms):
                    return rule.where(rule_list)
    return None


def _pattern_roots(policy: PermissionPolicy, matcher: PathPattern) -> list[str]:
    """The folders under which a gitignore-style pattern can match: its base, or for an anchored pattern
    (`/secrets/**`, `config/*.env`) the literal folders in front of its first wildcard."""
    body = matcher.pattern.lstrip("/")
    anchored = matcher.pattern.startswith("/") or "/" in body.rstrip("/")
    literal = glob_root(body)[0].rstrip("/") if anchored else ""
    return [os.path.join(base, literal) if literal else base for base in policy.bases.candidates(matcher.anchor)]


def _overlap(first: str, second: str) -> bool:
    first, second = first.rstrip("/") or "/", second.rstrip("/") or "/"
    return first == second or first.startswith(second.rstrip("/") + "/") or second.startswith(first.rstrip("/") + "/")
