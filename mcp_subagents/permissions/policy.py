"""Permission modes and the decision for one tool call: allow, ask or deny.

Order of evaluation, as in Claude Code: a matching deny rule denies in every mode (bypassPermissions too); plan
mode then denies every tool that is not read-only; a matching ask rule asks (in bypassPermissions too, since
ask rules exist to force a prompt); a matching allow rule allows; otherwise the mode decides. The agent's
permission map can then only narrow the result, and dontAsk turns every remaining ask into deny.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..messages import JsonObject
from .agent_map import agent_map_verdict
from .bash import ShellSyntaxError, SimpleCommand, matching_variants, split_command
from .modes import normalize_mode
from .patterns import Bases, CommandPattern, DomainPattern, PathPattern, url_host
from .rules import EDIT_TOOLS, PATH_TOOLS, PermissionRule, PermissionRules, RuleList
from .targets import PathTarget, TargetError, absolute_path, is_inside, path_target
from .verdict import Verdict

READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "TodoWrite", "NotebookRead", "LS"})
"""Tools every mode runs without asking (inside the allowed directories)."""

_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})
_CLIP = 120


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionPolicy:
    """Everything a permission decision depends on, for one agent run."""

    cwd: Path
    """Working directory: relative paths in calls and in `path`/`./path` rules resolve against it."""
    mode: str = "default"
    """The effective mode (see `effective_mode`)."""
    rules: PermissionRules = field(default_factory=PermissionRules)
    agent_map: JsonObject | None = None
    """The definition's compact `permission` map, which can only narrow."""
    roots: tuple[Path, ...] = ()
    """Directories file tools may use; empty means just `cwd`."""
    home: Path = field(default_factory=Path.home)
    project_root: Path | None = None
    """Where `/path` rules are anchored; None means `cwd`."""
    bash_sandboxed: bool = False
    """Bash commands run in the OS sandbox (sandbox.autoAllowBashIfSandboxed): a call that would ask is allowed,
    unless it sets dangerouslyDisableSandbox. Deny and ask rules still apply."""

    @property
    def allowed_roots(self) -> tuple[Path, ...]:
        return self.roots or (self.cwd,)

    @property
    def bases(self) -> Bases:
        return Bases(cwd=self.cwd, project=self.project_root or self.cwd, home=self.home)

    @property
    def active_mode(self) -> str:
        mode = normalize_mode(self.mode)
        return "default" if mode == "bypassPermissions" and self.rules.bypass_disabled else mode


def decide(policy: PermissionPolicy, tool: str, arguments: JsonObject) -> Verdict:
    """Allow, ask or deny one call of `tool` with its raw JSON arguments, and why.

    Never raises. "ask" is returned as is: a caller that cannot ask (a background task) denies instead.
    """
    mode = policy.active_mode
    if tool == "Bash":
        verdict = _bash_verdict(policy, mode, arguments.get("command"))
        if verdict.decision == "ask" and verdict.rule is None and _sandboxed(policy, arguments):
            verdict = Verdict("allow", "The command runs in the sandbox, so it needs no approval.")
    else:
        verdict = _tool_verdict(policy, mode, tool, arguments)
    if policy.agent_map is not None and verdict.decision != "deny":
        verdict = _narrow(verdict, agent_map_verdict(policy.agent_map, tool, arguments, bases=policy.bases))
    if verdict.decision == "ask" and mode == "dontAsk":
        verdict = Verdict("deny", f"{verdict.reason} dontAsk mode never asks, so the call was denied.", verdict.rule)
    return verdict


def _sandboxed(policy: PermissionPolicy, arguments: JsonObject) -> bool:
    return policy.bash_sandboxed and arguments.get("dangerouslyDisableSandbox") is not True


def _narrow(server: Verdict, agent: Verdict | None) -> Verdict:
    if agent is None:
        return server
    if agent.decision == "deny":
        return Verdict(
            "deny", f"Denied: {agent.reason}. The map only narrows; change the agent file to allow it.", agent.rule
        )
    if agent.decision == "ask" and server.decision == "allow":
        return Verdict("ask", f"Needs approval: {agent.reason}.", agent.rule)
    return server


def _tool_verdict(policy: PermissionPolicy, mode: str, tool: str, arguments: JsonObject) -> Verdict:
    subject = _subject(tool, arguments)
    try:
        target = path_target(tool, arguments, cwd=policy.cwd, home=policy.home)
    except TargetError as exc:
        return Verdict("deny", f"Cannot check the permissions of {tool}: {exc}.")
    raw_url = arguments.get("url") if tool == "WebFetch" else None
    url = raw_url if isinstance(raw_url, str) else None
    if tool == "WebFetch" and url is None:
        return Verdict("deny", "Cannot check the permissions of WebFetch: it needs 'url' as a string.")
    deny = _first_rule(policy, "deny", tool, target, url)
    if deny is not None:
        return Verdict("deny", f"{subject} is denied by {deny.where('deny')}.", deny.text)
    if mode == "plan" and tool not in READ_ONLY_TOOLS:
        return _plan_denial(tool)
    ask = _first_rule(policy, "ask", tool, target, url)
    if ask is not None:
        return Verdict("ask", f"{subject} needs approval: it matches {ask.where('ask')}.", ask.text)
    allow = _first_rule(policy, "allow", tool, target, url)
    if allow is not None:
        return Verdict("allow", f"Allowed by {allow.where('allow')}.", allow.text)
    return _mode_default(policy, mode, tool, target, subject, url)


def _first_rule(
    policy: PermissionPolicy, rule_list: RuleList, tool: str, target: PathTarget | None, url: str | None
) -> PermissionRule | None:
    bases = policy.bases
    for rule in policy.rules.listed(rule_list):
        if not rule.applies_to(tool):
            continue
        if rule.specifier is None:
            return rule
        matcher = rule.matcher
        if isinstance(matcher, PathPattern) and target is not None:
            hits = [matcher.matches(path, bases, directory=target.directory) for path in target.paths]
            # An allow rule must cover the path both as written and with symlinks resolved.
            if all(hits) if rule_list == "allow" else any(hits):
                return rule
        elif isinstance(matcher, DomainPattern) and url is not None and matcher.matches(url):
            return rule
    return None


def _mode_default(
    policy: PermissionPolicy, mode: str, tool: str, target: PathTarget | None, subject: str, url: str | None
) -> Verdict:
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode allows every call that no deny or ask rule matches.")
    inside = target is not None and is_inside(target, policy.allowed_roots)
    if tool in READ_ONLY_TOOLS:
        if target is None or inside:
            return Verdict("allow", f"{tool} is read-only and allowed in {mode} mode.")
        return _needs_approval(
            mode,
            f"{subject} is outside the allowed directories ({_roots(policy)})",
            _suggestion(policy, tool, target, url),
        )
    if mode == "acceptEdits" and tool in EDIT_TOOLS and inside:
        return Verdict("allow", "acceptEdits mode allows edits inside the allowed directories.")
    hint = ", or run with --permission-mode acceptEdits" if tool in EDIT_TOOLS and mode != "acceptEdits" else ""
    statement = f"{subject} is not allowed by any rule"
    return _needs_approval(mode, statement, _suggestion(policy, tool, target, url), hint)


def _needs_approval(mode: str, statement: str, suggestion: str, hint: str = "") -> Verdict:
    """Ask, or deny in dontAsk mode; `statement` says why the call is not allowed outright."""
    how = f'To allow it, add "{suggestion}" to permissions.allow in the settings file{hint}.'
    if mode == "dontAsk":
        return Verdict("deny", f"{statement}, and dontAsk mode denies what would need approval. {how}")
    return Verdict("ask", f"{statement}, so it needs approval in {mode} mode. {how}")


def _plan_denial(tool: str) -> Verdict:
    allowed = ", ".join(sorted(READ_ONLY_TOOLS & {"Read", "Glob", "Grep", "TodoWrite"}))
    return Verdict("deny", f"plan mode is read-only: {tool} cannot run. Only read-only tools ({allowed}) can.")


def _bash_verdict(policy: PermissionPolicy, mode: str, command: object) -> Verdict:
    if not isinstance(command, str):
        return Verdict("deny", "Cannot check the permissions of Bash: it needs 'command' as a string.")
    subject = f"The Bash command `{_clip(command)}`"
    whole = " ".join(command.split())
    try:
        pieces: tuple[SimpleCommand, ...] | None = split_command(command)
        problem = ""
    except ShellSyntaxError as exc:
        pieces, problem = None, str(exc)
    deny = _first_bash_rule(policy, "deny", whole, pieces)
    if deny is not None:
        return Verdict("deny", f"{subject} is denied by {deny.where('deny')}.", deny.text)
    if mode == "plan":
        return _plan_denial("Bash")
    redirected = _redirect_verdict(policy, mode, subject, pieces or ())
    if redirected is not None and redirected.decision == "deny":
        return redirected
    ask = _first_bash_rule(policy, "ask", whole, pieces)
    if ask is not None:
        return Verdict("ask", f"{subject} needs approval: it matches {ask.where('ask')}.", ask.text)
    if redirected is not None:
        return redirected
    return _bash_allow_or_mode(policy, mode, subject, whole, pieces, problem)


def _bash_allow_or_mode(
    policy: PermissionPolicy,
    mode: str,
    subject: str,
    whole: str,
    pieces: tuple[SimpleCommand, ...] | None,
    problem: str,
) -> Verdict:
    allow_rules = [rule for rule in policy.rules.allow if rule.applies_to("Bash")]
    for rule in allow_rules:
        exact = isinstance(rule.matcher, CommandPattern) and rule.matcher.exact and rule.matcher.matches(whole)
        if rule.specifier is None or exact:
            return Verdict("allow", f"Allowed by {rule.where('allow')}.", rule.text)
    if pieces:
        used = [rule for piece in pieces if (rule := _allowing_rule(allow_rules, piece)) is not None]
        if len(used) == len(pieces):
            texts = list(dict.fromkeys(rule.where("allow") for rule in used))
            return Verdict("allow", f"Allowed by {' and '.join(texts)}.", used[0].text)
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode allows every call that no deny or ask rule matches.")
    if pieces is None:
        return Verdict(
            "ask",
            f"{subject} could not be parsed safely ({problem}), so no rule can allow it piece by piece and it needs "
            'approval. To allow it anyway, add the exact command as "Bash(...)" to permissions.allow.',
        )
    pending = next((piece for piece in pieces if _allowing_rule(allow_rules, piece) is None), None)
    suggestion = _bash_suggestion(pending)
    if pending is not None and pending.substitution:
        statement = f"{subject} runs a command substitution ($(...), backticks, <(...)): only an exact rule allows that"
    elif pending is not None and len(pieces) > 1:
        statement = f"{subject} has a part that no rule allows (`{_clip(pending.text)}`)"
    else:
        statement = f"{subject} is not allowed by any rule"
    return _needs_approval(mode, statement, suggestion)


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
        for piece in pieces or ():
            if any(matcher.matches(text) for text in matching_variants(piece)):
                return rule
    return None


def _allowing_rule(rules: list[PermissionRule], piece: SimpleCommand) -> PermissionRule | None:
    """The allow rule that covers the piece. A piece that only redirects (`> file`) has none: nothing allowed it."""
    for rule in rules:
        matcher = rule.matcher
        if not isinstance(matcher, CommandPattern):
            continue
        # Only an exact rule may allow code run by a substitution: a wildcard would let anything through.
        if piece.substitution and not matcher.exact:
            continue
        if piece.words and matcher.matches(piece.text):
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
            verdict = _one_redirect(policy, mode, subject, redirect.target, redirect.writes, redirect.known, moved)
            if verdict is None:
                continue
            if verdict.decision == "deny":
                return verdict
            found = found or verdict
        moved = moved or (bool(piece.values) and piece.values[0] in _DIRECTORY_CHANGERS)
    return found


def _one_redirect(
    policy: PermissionPolicy, mode: str, subject: str, target: str, writes: bool, known: bool, moved: bool
) -> Verdict | None:
    anchored = os.path.isabs(target) or target == "~" or target.startswith("~/")
    if not known or (moved and not anchored):
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
        rule = _first_rule(policy, rule_list, tool, checked, None)
        if rule is not None:
            return Verdict(rule_list, f"{subject} {verb} {path}, which matches {rule.where(rule_list)}.", rule.text)
    # Like Claude Code, a command that is allowed may write inside the allowed directories; elsewhere it asks.
    if not writes or mode == "bypassPermissions" or is_inside(checked, policy.allowed_roots):
        return None
    if _first_rule(policy, "allow", tool, checked, None) is not None:
        return None
    return _needs_approval(
        mode,
        f"{subject} writes to {path}, outside the allowed directories ({_roots(policy)})",
        _suggestion(policy, tool, checked, None),
    )


def _subject(tool: str, arguments: JsonObject) -> str:
    if tool == "WebFetch":
        return f"WebFetch of {_clip(str(arguments.get('url')))}"
    argument = {"Glob": "path", "Grep": "path"}.get(tool, "file_path")
    value = arguments.get(argument) or arguments.get("notebook_path")
    if tool in PATH_TOOLS and isinstance(value, str):
        return f"{tool} on {_clip(value)}"
    if tool in ("Glob", "Grep"):
        return f"{tool} in the working directory"
    return tool


def _suggestion(policy: PermissionPolicy, tool: str, target: PathTarget | None, url: str | None) -> str:
    if tool == "WebFetch":
        host = url_host(url or "")
        return f"WebFetch(domain:{host})" if host else "WebFetch"
    if target is None or tool not in PATH_TOOLS:
        return tool
    name = "Edit" if tool in EDIT_TOOLS else "Read"
    path = target.paths[0]
    tail = "/**" if target.directory else ""
    for base, prefix in ((policy.cwd, "./"), (policy.home, "~/")):
        base_text = os.path.normpath(str(base))
        if path.startswith(base_text.rstrip("/") + "/"):
            return f"{name}({prefix}{path[len(base_text.rstrip('/')) + 1 :]}{tail})"
        if path == base_text:
            return f"{name}({prefix}**)"
    return f"{name}(/{path}{tail})"


def _bash_suggestion(piece: SimpleCommand | None) -> str:
    if piece is None or not piece.words:
        return "Bash"
    if piece.substitution:
        return f"Bash({piece.text})"
    words, values = list(piece.words), list(piece.values)
    simple = len(words) > 1 and not words[1].startswith("-") and words[1] == values[1]
    head = f"{words[0]} {words[1]}" if simple else words[0]
    return f"Bash({head} *)"


def _roots(policy: PermissionPolicy) -> str:
    return ", ".join(str(root) for root in policy.allowed_roots)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _CLIP else f"{flat[:_CLIP]}…"
