"""What the read-only pieces of a Bash command read, judged by the Read rules and the allowed directories.

A read-only command runs without asking only when every file it names is inside the allowed directories (or
covered by a Read allow rule), and no Read deny or ask rule could match a file inside a folder it searches. A Read
deny rule that matches a file the command names denies the command; a Read ask rule asks. As in Claude Code this
covers the files a command names: a program the check cannot read is not judged by it.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from ..glob_root import glob_root
from .bash import SimpleCommand, program_name
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
            known = known and not (piece.values and program_name(piece.values[0]) in _DIRECTORY_CHANGERS)
            continue
        judged = _judge(policy, subject, reads, bases if known else None)
        if judged.verdict is not None and (verdict is None or _stricter(judged.verdict, verdict)):
            verdict = judged.verdict
        runs_unasked.append(judged.problem is None and judged.verdict is None)
        first_problem = first_problem or judged.problem
        if reads.moves_to is not None:
            bases += [path for base in bases for path in _absolute(policy, reads.moves_to, base)]
    return ReadCheck(verdict=verdict, runs_unasked=tuple(runs_unasked), first_problem=first_problem)


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
                target = _target(policy, path)
                if target is None:
                    problem = problem or (f"reads '{written}', which cannot be checked", "Bash")
                    continue
                for rule_list in ("deny", "ask"):
                    rule = first_rule(policy, rule_list, "Read", target, None)
                    if rule is not None:
                        reason = f"{subject} reads {path}, which matches {rule.where(rule_list)}."
                        return _Judged(Verdict(rule_list, reason, rule.text), None)
                if (
                    not is_inside(target, policy.allowed_roots)
                    and first_rule(policy, "allow", "Read", target, None) is None
                ):
                    why = f"reads {path}, outside the allowed directories"
                    problem = problem or (why, path_suggestion(policy, "Read", target, None))
    for written in reads.trees:
        for base in bases or [str(policy.cwd)]:
            for folder in _absolute(policy, written, base, expand=False):
                rule = _rule_reaching_into(policy, folder)
                if rule is not None:
                    why = f"searches {folder}, where {rule} could match files"
                    problem = problem or (why, "Bash")
    return _Judged(None, problem)


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
        return [path, os.path.dirname(path)]
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
