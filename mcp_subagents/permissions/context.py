"""What a permission decision depends on (`PermissionPolicy`), and the pieces of a verdict every tool shares."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.guards import BashPlace as BashRuns
from ..core.json_values import JsonObject
from .modes import normalize_mode
from .patterns import Bases, DomainPattern, PathPattern, url_host
from .protected import ProtectedPaths
from .rules import EDIT_TOOLS, PATH_TOOLS, PermissionRule, PermissionRules, RuleList
from .targets import PathTarget, TargetError, path_target
from .verdict import Verdict

READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "TodoWrite", "NotebookRead", "LS", "Skill", "Task", "Agent"})
"""Tools every mode runs without asking (inside the allowed directories). Launching a nested subagent (`Task`) is
one, as in Claude Code: the subagent's own tool calls are checked like any other."""

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
    protected: ProtectedPaths = field(default_factory=ProtectedPaths)
    """The server's own configuration, which no mode lets a subagent change without a rule naming it."""
    bash_runs: BashRuns = "unconfined"
    """Where a Bash command runs, set per call by the sandbox's gate: "unconfined" (this server has no sandbox, so
    the ordinary check applies), "sandboxed", or "outside_sandbox" (the sandbox is on but this command leaves it:
    `dangerouslyDisableSandbox` or `sandbox.excludedCommands`). A command outside the sandbox runs only by an allow
    rule that names it or in bypassPermissions mode: the read-only classifier never decides for it."""
    sandbox_auto_allow: bool = False
    """`sandbox.autoAllowBashIfSandboxed` (or `--sandbox auto-allow`): a sandboxed command no rule decided runs
    without asking in default and acceptEdits mode."""
    sandbox_too_wide: str | None = None
    """Why the sandbox cannot confine writes to a project (the project or a writable root is `/`, the home
    directory or a folder holding it): then no sandboxed command runs without asking, whatever the settings say."""

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


def first_rule(
    policy: PermissionPolicy, rule_list: RuleList, tool: str, target: PathTarget | None, url: str | None
) -> PermissionRule | None:
    """The first rule of the list that matches the call's path or URL (or names the whole tool)."""
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


def read_filter(policy: PermissionPolicy) -> Callable[[str], bool] | None:
    """For search tools: whether an absolute path may be listed or printed (no Read deny rule covers it, as
    written or resolved). None when no Read deny rule exists, so searches skip the check."""
    if not any(rule.applies_to("Read") for rule in policy.rules.deny):
        return None
    seen: dict[str, bool] = {}

    def readable(path: str) -> bool:
        shown = seen.get(path)
        if shown is None:
            try:
                target = path_target("Read", {"file_path": path}, cwd=policy.cwd, home=policy.home)
            except TargetError:
                target = None
            shown = target is not None and first_rule(policy, "deny", "Read", target, None) is None
            seen[path] = shown
        return shown

    return readable


def protected_write(policy: PermissionPolicy, subject: str, path: str) -> Verdict | None:
    """ask when `path` (absolute) is protected and no Edit allow rule names it; None when it may be written."""
    protection = policy.protected.protection(path)
    if protection is None:
        return None
    try:
        target = path_target("Edit", {"file_path": path}, cwd=policy.cwd, home=policy.home)
    except TargetError:
        target = None
    for rule in policy.rules.allow:
        matcher = rule.matcher
        if target is None or not rule.applies_to("Edit") or not isinstance(matcher, PathPattern):
            continue
        named = protection.marker in (rule.specifier or "")
        if named and all(matcher.matches(form, policy.bases) for form in target.paths):
            return None
    suggestion = path_suggestion(policy, "Edit", target, None)
    return Verdict(
        "ask",
        f"{subject} writes to {path}, {protection.what}. No mode lets a subagent change it on its own, so it needs "
        f'approval. To allow it, add "{suggestion}" (a rule that names the path) to permissions.allow.',
        suggestion=suggestion,
    )


def needs_approval(
    mode: str, statement: str, suggestion: str, hint: str = "", *, broader: str | None = None
) -> Verdict:
    """Ask, or deny in dontAsk mode; `statement` says why the call is not allowed outright. `suggestion` is the
    narrowest rule that would allow the call; `broader`, if any, one that also allows calls like it."""
    # Rules are shown as JSON strings: what to paste into the settings file, quotes in commands escaped.
    if broader is None:
        how = f"To allow it, add {_json(suggestion)} to permissions.allow in the settings file{hint}."
    else:
        how = (
            f"To allow exactly this call, add {_json(suggestion)} to permissions.allow in the settings file{hint}; "
            f"to allow every call like it, add {_json(broader)} instead."
        )
    if mode == "dontAsk":
        return Verdict("deny", f"{statement}, and dontAsk mode denies what would need approval. {how}")
    return Verdict("ask", f"{statement}, so it needs approval in {mode} mode. {how}", suggestion=suggestion)


def _json(rule: str) -> str:
    return json.dumps(rule, ensure_ascii=False)


def plan_denial(tool: str) -> Verdict:
    allowed = ", ".join(sorted(READ_ONLY_TOOLS & {"Read", "Glob", "Grep", "TodoWrite"}))
    return Verdict(
        "deny",
        f"plan mode is read-only: {tool} cannot run. Only read-only tools ({allowed}) and Bash commands that only "
        "read (such as ls, cat, grep, git status) can.",
    )


def path_suggestion(policy: PermissionPolicy, tool: str, target: PathTarget | None, url: str | None) -> str:
    """The rule that would allow the call, as the user would write it."""
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


def roots_text(policy: PermissionPolicy) -> str:
    return ", ".join(str(root) for root in policy.allowed_roots)


def clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _CLIP else f"{flat[:_CLIP]}…"
