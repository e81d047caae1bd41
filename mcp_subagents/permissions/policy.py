"""The decision for one tool call: allow, ask or deny.

Order of evaluation, as in Claude Code: a matching deny rule denies in every mode (bypassPermissions too); plan
mode then denies every tool that is not read-only; a matching ask rule asks (in bypassPermissions too, since
ask rules exist to force a prompt); a matching allow rule allows; otherwise the mode decides. The agent's
permission map can then only narrow the result, and dontAsk turns every remaining ask into deny. Bash has its
own engine (`bash_policy`); this module decides the file and web tools.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.json_values import JsonObject
from .agent_map import agent_map_verdict
from .bash_policy import bash_verdict
from .context import (
    READ_ONLY_TOOLS,
    PermissionPolicy,
    clip,
    first_rule,
    needs_approval,
    path_suggestion,
    plan_denial,
    protected_write,
    roots_text,
)
from .rules import EDIT_TOOLS, PATH_TOOLS
from .targets import PathTarget, TargetError, is_inside, path_target
from .verdict import Verdict

__all__ = ["READ_ONLY_TOOLS", "PermissionPolicy", "decide"]


def decide(policy: PermissionPolicy, tool: str, arguments: JsonObject) -> Verdict:
    """Allow, ask or deny one call of `tool` with its raw JSON arguments, and why.

    Never raises. "ask" is returned as is: a caller that cannot ask (a background task) denies instead.
    """
    verdict = _decide(policy, tool, arguments)
    if verdict.decision == "allow" or not policy.rules.withheld_allow:
        return verdict
    return _naming_withheld(policy, tool, arguments, verdict)


def _naming_withheld(policy: PermissionPolicy, tool: str, arguments: JsonObject, verdict: Verdict) -> Verdict:
    """`verdict` (ask or deny) as it is, but saying so when an allow rule of the untrusted project's own files would
    have allowed the call: the person wrote that rule and needs to learn why it did not count. Only the reason
    changes; the withheld rules never decide."""
    rules = policy.rules
    counted = replace(rules, allow=(*rules.allow, *rules.withheld_allow), withheld_allow=())
    would = _decide(replace(policy, rules=counted), tool, arguments)
    if would.decision != "allow":
        return verdict
    named = list(dict.fromkeys(r.where("allow") for r in rules.withheld_allow if r.where("allow") in would.reason))
    if named:
        which = f"{' and '.join(named)} would allow this call but {'does' if len(named) == 1 else 'do'} not count"
    else:
        files = ", ".join(dict.fromkeys(rule.source for rule in rules.withheld_allow))
        which = f"The allow rules of {files} would allow this call but do not count"
    return replace(verdict, reason=f"{verdict.reason} {which}, because {rules.why_withheld}.")


def _decide(policy: PermissionPolicy, tool: str, arguments: JsonObject) -> Verdict:
    mode = policy.active_mode
    if tool == "Bash":
        verdict = bash_verdict(policy, mode, arguments)
    else:
        verdict = _tool_verdict(policy, mode, tool, arguments)
    if policy.agent_map is not None and verdict.decision != "deny":
        verdict = _narrow(verdict, agent_map_verdict(policy.agent_map, tool, arguments, bases=policy.bases))
    if verdict.decision == "ask" and mode == "dontAsk":
        verdict = Verdict("deny", f"{verdict.reason} dontAsk mode never asks, so the call was denied.", verdict.rule)
    elif verdict.decision == "ask" and policy.rules.deny_instead_of_prompting:
        because = "permissions.denyInsteadOfPrompting is set, so the call was denied instead of asked about."
        verdict = Verdict("deny", f"{verdict.reason} {because}", verdict.rule)
    return verdict


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
    deny = first_rule(policy, "deny", tool, target, url)
    if deny is not None:
        return Verdict("deny", f"{subject} is denied by {deny.where('deny')}.", deny.text)
    if mode == "plan" and tool not in READ_ONLY_TOOLS:
        return plan_denial(tool)
    if tool in EDIT_TOOLS and target is not None:
        for path in target.paths:
            protected = protected_write(policy, subject, path)
            if protected is not None:
                return protected
    ask = first_rule(policy, "ask", tool, target, url)
    if ask is not None:
        return Verdict("ask", f"{subject} needs approval: it matches {ask.where('ask')}.", ask.text)
    allow = first_rule(policy, "allow", tool, target, url)
    if allow is not None:
        return Verdict("allow", f"Allowed by {allow.where('allow')}.", allow.text)
    return _mode_default(policy, mode, tool, target, subject, url)


def _mode_default(
    policy: PermissionPolicy, mode: str, tool: str, target: PathTarget | None, subject: str, url: str | None
) -> Verdict:
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode allows every call that no deny or ask rule matches.")
    inside = target is not None and is_inside(target, policy.allowed_roots)
    if tool in READ_ONLY_TOOLS:
        if target is None or inside:
            return Verdict("allow", f"{tool} is read-only and allowed in {mode} mode.")
        return needs_approval(
            mode,
            f"{subject} is outside the allowed directories ({roots_text(policy)})",
            path_suggestion(policy, tool, target, url),
        )
    if mode == "acceptEdits" and tool in EDIT_TOOLS and inside:
        return Verdict("allow", "acceptEdits mode allows edits inside the allowed directories.")
    hint = ", or run with --permission-mode acceptEdits" if tool in EDIT_TOOLS and mode != "acceptEdits" else ""
    statement = f"{subject} is not allowed by any rule"
    return needs_approval(mode, statement, path_suggestion(policy, tool, target, url), hint)


def _subject(tool: str, arguments: JsonObject) -> str:
    if tool == "WebFetch":
        return f"WebFetch of {clip(str(arguments.get('url')))}"
    argument = {"Glob": "path", "Grep": "path"}.get(tool, "file_path")
    value = arguments.get(argument) or arguments.get("notebook_path")
    if tool in PATH_TOOLS and isinstance(value, str):
        return f"{tool} on {clip(value)}"
    if tool in ("Glob", "Grep"):
        return f"{tool} in the working directory"
    return tool
