"""The permission decision for one Bash command: its pieces against deny, ask and allow rules, its redirections
against the file rules, then the mode."""

from __future__ import annotations

import os
from dataclasses import replace

from ..core.json_values import JsonObject
from .bash import Redirect, ShellSyntaxError, SimpleCommand, matching_variants, printed_text, split_command
from .bash_reads import ReadCheck, check_reads
from .bash_writes import protected_writes
from .context import (
    BashRuns,
    PermissionPolicy,
    clip,
    first_rule,
    needs_approval,
    path_suggestion,
    plan_denial,
    roots_text,
)
from .patterns import CommandPattern
from .read_only import read_only
from .rules import PermissionRule, RuleList
from .targets import TargetError, absolute_path, is_inside, path_target
from .verdict import Verdict

_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})


def bash_verdict(policy: PermissionPolicy, mode: str, arguments: JsonObject) -> Verdict:
    """Allow, ask or deny a Bash call with these arguments (`command`, and `dangerouslyDisableSandbox`)."""
    command = arguments.get("command")
    if not isinstance(command, str):
        return Verdict("deny", "Cannot check the permissions of Bash: it needs 'command' as a string.")
    subject = f"The Bash command `{clip(command)}`"
    whole = " ".join(command.split())
    try:
        pieces: tuple[SimpleCommand, ...] | None = split_command(command)
        problem = ""
    except ShellSyntaxError as exc:
        pieces, problem = None, str(exc)
    runs = _where_it_runs(policy, arguments)
    deny = _first_bash_rule(policy, "deny", whole, pieces)
    if deny is not None:
        return Verdict("deny", f"{subject} is denied by {deny.where('deny')}.", deny.text)
    reads = check_reads(policy, subject, pieces or ())
    if reads.verdict is not None and reads.verdict.decision == "deny":
        return reads.verdict
    if mode == "plan":
        return _plan_verdict(subject, runs, pieces, reads, arguments)
    redirected = _redirect_verdict(policy, mode, subject, pieces or ())
    if redirected is not None and redirected.decision == "deny":
        return redirected
    protected = protected_writes(policy, subject, pieces or ())
    if protected is not None:
        return protected
    ask = _first_bash_rule(policy, "ask", whole, pieces)
    if ask is not None:
        return Verdict("ask", f"{subject} needs approval: it matches {ask.where('ask')}.", ask.text)
    if reads.verdict is not None:
        return reads.verdict
    allow_rules = [rule for rule in policy.rules.allow if rule.applies_to("Bash")]
    if runs == "outside_sandbox":
        return redirected or _outside_verdict(allow_rules, mode, subject, whole, pieces, arguments)
    verdict = (
        redirected
        or _allowed(allow_rules, mode, subject, whole, pieces, reads.runs_unasked)
        or _mode_fallback(allow_rules, mode, subject, pieces, problem, reads)
    )
    # Only what no rule decided: deny rules, ask rules and protected paths have already answered.
    if verdict.decision == "ask" and verdict.rule is None and runs == "sandboxed":
        return _sandbox_verdict(policy, mode, subject, verdict)
    return verdict


_FALSE_WORDS = frozenset({"0", "off", "f", "false", "n", "no"})


def asks_to_leave_sandbox(arguments: JsonObject) -> bool:
    """Whether the call asks to run outside the sandbox, read as the Bash tool reads it: by either spelling of the
    argument, and any value the tool takes for true (`"true"`, `1`)."""
    for key in ("dangerouslyDisableSandbox", "dangerously_disable_sandbox"):
        value = arguments.get(key)
        if value is None or value is False or (isinstance(value, int | float) and value == 0):
            continue
        if isinstance(value, str) and value.strip().lower() in _FALSE_WORDS:
            continue
        return True
    return False


def _where_it_runs(policy: PermissionPolicy, arguments: JsonObject) -> BashRuns:
    # The gate sets the place per call; a call that asks to leave is never taken for a sandboxed one.
    if policy.bash_runs == "sandboxed" and asks_to_leave_sandbox(arguments):
        return "outside_sandbox"
    return policy.bash_runs


def _plan_verdict(
    subject: str,
    runs: BashRuns,
    pieces: tuple[SimpleCommand, ...] | None,
    reads: ReadCheck,
    arguments: JsonObject,
) -> Verdict:
    if runs == "outside_sandbox":
        denial = plan_denial("Bash")
        why = _leaving_reason(arguments)
        return Verdict("deny", f"{denial.reason} {subject} would run outside the sandbox ({why}).")
    if pieces and all(reads.runs_unasked):
        return Verdict("allow", f"{subject} only reads inside the allowed directories, which plan mode allows.")
    return plan_denial("Bash")


def _outside_verdict(
    allow_rules: list[PermissionRule],
    mode: str,
    subject: str,
    whole: str,
    pieces: tuple[SimpleCommand, ...] | None,
    arguments: JsonObject,
) -> Verdict:
    """A command that leaves the sandbox runs without asking only by allow rules that cover every part of it, or in
    bypassPermissions mode: nothing confines what it does, so neither "it only reads" nor acceptEdits counts."""
    covered = _allowed(allow_rules, mode, subject, whole, pieces, tuple(False for _ in pieces or ()))
    if covered is not None:
        return covered
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode allows every call that no deny or ask rule matches.")
    statement = (
        f"{subject} asks to run outside the sandbox ({_leaving_reason(arguments)}), where nothing confines what it "
        "reads, writes or runs; only an allow rule that matches the command, or bypassPermissions mode, lets such a "
        "command run without asking"
    )
    if pieces is not None and len(pieces) == 1:
        suggestion, broader = _bash_suggestions(pieces[0])
    else:
        suggestion, broader = f"Bash({_literal(whole)})", None
    return needs_approval(mode, statement, suggestion, broader=broader)


def _leaving_reason(arguments: JsonObject) -> str:
    if asks_to_leave_sandbox(arguments):
        return "it sets dangerouslyDisableSandbox"
    return "it matches sandbox.excludedCommands"


def _sandbox_verdict(policy: PermissionPolicy, mode: str, subject: str, verdict: Verdict) -> Verdict:
    """Claude Code's autoAllowBashIfSandboxed: in default and acceptEdits mode a sandboxed command no rule decided
    runs without asking, when the settings turn it on and the sandbox confines writes to a project."""
    if mode not in ("default", "acceptEdits"):
        return verdict
    if not policy.sandbox_auto_allow:
        how = (
            "Sandboxed commands run without asking only when the settings say sandbox.autoAllowBashIfSandboxed: "
            "true (or the server runs with --sandbox auto-allow)."
        )
        return replace(verdict, decision="ask", reason=f"{verdict.reason} {how}")
    if policy.sandbox_too_wide is not None:
        why = (
            f"The sandbox does not let it run without asking: {policy.sandbox_too_wide}. Start the server with --cwd "
            "set to the project folder (or let the host send its roots) so that sandboxed commands can run unasked."
        )
        return replace(verdict, decision="ask", reason=f"{verdict.reason} {why}")
    return Verdict(
        "allow",
        f"{subject} runs in the sandbox, which confines what it can write and reach, so {mode} mode runs it "
        "without asking (sandbox.autoAllowBashIfSandboxed).",
    )


def _allowed(
    allow_rules: list[PermissionRule],
    mode: str,
    subject: str,
    whole: str,
    pieces: tuple[SimpleCommand, ...] | None,
    read_only: tuple[bool, ...],
) -> Verdict | None:
    """Allowed when a rule covers the whole command, or each piece is covered by a rule or only reads."""
    for rule in allow_rules:
        exact = isinstance(rule.matcher, CommandPattern) and rule.matcher.exact and rule.matcher.matches(whole)
        if rule.specifier is None or exact:
            return Verdict("allow", f"Allowed by {rule.where('allow')}.", rule.text)
    if not pieces:
        return None
    used = [_allowing_rule(allow_rules, piece) for piece in pieces]
    if not all(rule is not None or unasked for rule, unasked in zip(used, read_only, strict=True)):
        return None
    rules = [rule for rule in used if rule is not None]
    if not rules:
        return Verdict("allow", f"{subject} only reads inside the allowed directories, so {mode} mode runs it.")
    texts = " and ".join(dict.fromkeys(rule.where("allow") for rule in rules))
    rest = "; its other parts only read" if len(rules) < len(pieces) else ""
    return Verdict("allow", f"Allowed by {texts}{rest}.", rules[0].text)


def _mode_fallback(
    allow_rules: list[PermissionRule],
    mode: str,
    subject: str,
    pieces: tuple[SimpleCommand, ...] | None,
    problem: str,
    reads: ReadCheck,
) -> Verdict:
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode allows every call that no deny or ask rule matches.")
    if pieces is None:
        return Verdict(
            "ask",
            f"{subject} could not be parsed safely ({problem}), so no rule can allow it piece by piece and it needs "
            'approval. To allow it anyway, add the exact command as "Bash(...)" to permissions.allow.',
        )
    pending = next(
        (
            piece
            for piece, unasked in zip(pieces, reads.runs_unasked, strict=True)
            if not unasked and _allowing_rule(allow_rules, piece) is None
        ),
        None,
    )
    suggestion, broader = _bash_suggestions(pending)
    if pending is not None and read_only(pending) is not None and reads.first_problem is not None:
        why, suggested = reads.first_problem
        # A Read rule for the path, where there is one; else this exact command (never Bash as a whole).
        suggestion = suggested if suggested != "Bash" else suggestion
        broader = None
        statement = f"{subject} {why}"
    elif pending is not None and pending.substitution:
        statement = f"{subject} runs a command substitution ($(...), backticks, <(...)): only an exact rule allows that"
    elif pending is not None and len(pieces) > 1:
        statement = f"{subject} has a part that no rule allows (`{clip(pending.text)}`)"
    else:
        statement = f"{subject} is not allowed by any rule"
    return needs_approval(mode, statement, suggestion, broader=broader)


def _first_bash_rule(
    policy: PermissionPolicy, rule_list: RuleList, whole: str, pieces: tuple[SimpleCommand, ...] | None
) -> PermissionRule | None:
    for rule in policy.rules.listed(rule_list):
        if not rule.applies_to("Bash"):
            continue
        if rule.specifier is None:
            return rule
        matcher = rule.matcher
        if not isinstance(matcher, CommandPattern):
            continue
        if matcher.matches(whole):
            return rule
        for piece, fed in _with_piped_text(pieces or ()):
            if any(matcher.matches(text) for text in matching_variants(piece, fed=fed)):
                return rule
    return None


def _with_piped_text(pieces: tuple[SimpleCommand, ...]) -> list[tuple[SimpleCommand, str | None]]:
    """Each piece with the text the piece before it prints into its pipe, when the command line shows it."""
    return [
        (piece, printed_text(pieces[index - 1]) if piece.piped and index else None)
        for index, piece in enumerate(pieces)
    ]


def _allowing_rule(rules: list[PermissionRule], piece: SimpleCommand) -> PermissionRule | None:
    """The allow rule that covers the piece. A piece that only redirects (`> file`) has none: nothing allowed it."""
    for rule in rules:
        matcher = rule.matcher
        if not isinstance(matcher, CommandPattern):
            continue
        # Only an exact rule may allow code run by a substitution: a wildcard would let anything through.
        if piece.substitution and not matcher.exact:
            continue
        if piece.words and matcher.matches(piece.rule_text):
            return rule
    return None


def _redirect_verdict(
    policy: PermissionPolicy, mode: str, subject: str, pieces: tuple[SimpleCommand, ...]
) -> Verdict | None:
    """The strictest verdict for the files the command redirects to or from, None when they are all fine."""
    found: Verdict | None = None
    moved = False
    for piece in pieces:
        for redirect in piece.redirects:
            verdict = _one_redirect(policy, mode, subject, redirect, moved)
            if verdict is None:
                continue
            if verdict.decision == "deny":
                return verdict
            found = found or verdict
        moved = moved or (bool(piece.values) and piece.values[0] in _DIRECTORY_CHANGERS)
    return found


def _one_redirect(policy: PermissionPolicy, mode: str, subject: str, redirect: Redirect, moved: bool) -> Verdict | None:
    target, writes = redirect.target, redirect.writes
    anchored = os.path.isabs(target) or target == "~" or target.startswith("~/")
    if not redirect.known or (moved and not anchored):
        if not writes or mode == "bypassPermissions":
            return None
        return Verdict(
            "ask",
            f"{subject} writes to '{target}', a file that is only known when the command runs, so it needs approval.",
        )
    try:
        path = absolute_path(target, cwd=policy.cwd, home=policy.home)
        checked = path_target("Edit" if writes else "Read", {"file_path": path}, cwd=policy.cwd, home=policy.home)
    except TargetError:
        return None
    if checked is None:
        return None
    tool, verb = ("Edit", "writes to") if writes else ("Read", "reads")
    for rule_list in ("deny", "ask"):
        rule = first_rule(policy, rule_list, tool, checked, None)
        if rule is not None:
            return Verdict(rule_list, f"{subject} {verb} {path}, which matches {rule.where(rule_list)}.", rule.text)
    # Like Claude Code, a command that is allowed may write inside the allowed directories; elsewhere it asks.
    if not writes or mode == "bypassPermissions" or is_inside(checked, policy.allowed_roots):
        return None
    if first_rule(policy, "allow", tool, checked, None) is not None:
        return None
    return needs_approval(
        mode,
        f"{subject} writes to {path}, outside the allowed directories ({roots_text(policy)})",
        path_suggestion(policy, tool, checked, None),
    )


def _bash_suggestions(piece: SimpleCommand | None) -> tuple[str, str | None]:
    """The narrowest rule that allows exactly this command, and a broader one for commands like it (None when only
    the exact rule is safe: code run by a substitution is allowed by an exact rule only)."""
    if piece is None or not piece.words:
        return "Bash", None
    exact = f"Bash({_literal(piece.rule_text)})"
    if piece.substitution or piece.feeds:
        return exact, None
    words, values = list(piece.words), list(piece.values)
    simple = len(words) > 1 and not words[1].startswith("-") and words[1] == values[1]
    head = f"{words[0]} {words[1]}" if simple else words[0]
    broader = f"Bash({_literal(head)} *)"
    return exact, (broader if broader != exact else None)


def _literal(command: str) -> str:
    """Command text as a rule pattern that matches it literally: its own stars escaped."""
    return command.replace("*", "\\*")
