"""`AgentHooks`: runs the hooks of one agent run at each event and turns their answers into what the loop, the
permission gate and the run's start need (`hook_points`).

All handlers that match an event run at once; their answers are combined in configuration order. Each gets Claude
Code's JSON on stdin: the common fields (`session_id`, `transcript_path`, `cwd`, `permission_mode`,
`hook_event_name`, `agent_id`, `agent_type`, `effort`) and the event's own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from ...core.hook_points import AfterTool, BeforeStop, BeforeTool, HookPermission, PermissionAnswer
from ...core.json_values import JsonObject
from ...core.messages import ToolCall, ToolResult
from ...permissions.asking import Denial
from .conditions import condition_matches
from .config import CommandHook, HookEvent, HookSet
from .output import HookReply, clip, read_reply
from .runner import run_command_hook

logger = logging.getLogger(__name__)

_PRECEDENCE = ("deny", "defer", "ask", "allow")
"""PreToolUse decisions from several hooks: the first of these that any hook gave wins."""
_LEGACY_DECISIONS = {"approve": "allow", "block": "deny"}


@dataclass(frozen=True, slots=True, kw_only=True)
class HookIdentity:
    """Who the hooks run for: the common input fields, and where and with what environment they run."""

    session_id: str
    """The id of the outermost task of this run's tree (Claude Code's main session)."""
    transcript_path: Path
    """That task's transcript."""
    agent_id: str
    agent_type: str
    agent_transcript_path: Path
    cwd: Path
    project_dir: Path
    """`$CLAUDE_PROJECT_DIR` for the hook commands."""
    permission_mode: str
    effort: str | None
    env: Mapping[str, str]
    home: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class StartAnswer:
    """SubagentStart's answer: text for the start of the agent's conversation, or a stop before it runs."""

    context: tuple[str, ...] = ()
    stop: str | None = None


class AgentHooks:
    """The hooks of one run. Implements `hook_points.RunHooks` and `hook_points.PermissionHook`."""

    def __init__(
        self,
        hooks: HookSet,
        who: HookIdentity,
        *,
        report: Callable[[str], None] | None = None,
        denials: list[Denial] | None = None,
    ) -> None:
        self.hooks = hooks
        self.who = who
        self._report = report
        self._denials = denials

    # ---- the run's start and end ------------------------------------------------------------------------------

    async def subagent_start(self) -> StartAnswer:
        replies = await self._fire("SubagentStart", self.who.agent_type, {})
        stop = _first_stop(replies)
        context = [reply.context for reply in replies if reply.context]
        for reply in replies:
            if reply.blocks:  # SubagentStart cannot block: its stderr is for the person only
                self._note(f"SubagentStart hook exited with 2 (it cannot block): {reply.block_reason}")
        return StartAnswer(context=(*context, *_notices(replies)), stop=stop)

    async def before_stop(self, text: str, *, continued: bool) -> BeforeStop:
        payload: JsonObject = {
            "stop_hook_active": continued,
            "agent_transcript_path": str(self.who.agent_transcript_path),
            "last_assistant_message": text,
            "background_tasks": [],
            "session_crons": [],
        }
        replies = await self._fire("SubagentStop", self.who.agent_type, payload)
        stop = _first_stop(replies)
        if stop is not None:
            return BeforeStop(stop=stop)
        reasons = [reply.block_reason for reply in replies if reply.blocks]
        reasons += [
            reply.text("reason", top_level=True) or "a SubagentStop hook asked you to continue"
            for reply in replies
            if not reply.blocks and reply.data is not None and reply.data.get("decision") == "block"
        ]
        return BeforeStop(go_on="\n".join(reasons) if reasons else None)

    # ---- around each tool call --------------------------------------------------------------------------------

    async def before_tool(self, call: ToolCall) -> BeforeTool:
        payload: JsonObject = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}
        replies = await self._fire("PreToolUse", call.name, payload, call=call)
        context = tuple(reply.context for reply in replies if reply.context) + _notices(replies)
        stop = _first_stop(replies)
        if stop is not None:
            return BeforeTool(stop=stop, context=context)
        blocked = [reply.block_reason for reply in replies if reply.blocks]
        decisions = [(reply, _decision(reply)) for reply in replies if not reply.blocks]
        decided = next((d for d in _PRECEDENCE if any(given == d for _, given in decisions)), None)
        if decided == "deny":
            blocked += [
                reply.text("permissionDecisionReason") or reply.text("reason", top_level=True) or "denied by a hook"
                for reply, given in decisions
                if given == "deny"
            ]
        if blocked:
            reason = "\n".join(blocked)
            self._record_denial(call, f"Blocked by a PreToolUse hook: {reason}")
            return BeforeTool(blocked=f"A PreToolUse hook blocked this call: {reason}", context=context)
        if decided == "defer":
            logger.info(
                "a PreToolUse hook answered defer for %s; that only applies in claude -p, so ignored", call.name
            )
        updated = [args for reply in replies if (args := _object(reply.specific().get("updatedInput"))) is not None]
        permission: HookPermission = decided if decided in ("allow", "ask") else None
        return BeforeTool(permission=permission, arguments=updated[-1] if updated else None, context=context)

    async def after_tool(
        self,
        call: ToolCall,
        result: ToolResult,
        *,
        failed: bool,
        duration_s: float,
        response: Callable[[], object] | None = None,
    ) -> AfterTool:
        event: HookEvent = "PostToolUseFailure" if failed else "PostToolUse"
        if not any(self._applies(hook, call) for hook in self.hooks.handlers(event, call.name)):
            return AfterTool()  # nothing listens: the structured result is not worth building
        payload: JsonObject = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}
        if failed:
            payload |= {"error": result.content.removeprefix("Error: "), "is_interrupt": False}
        else:
            payload["tool_response"] = response() if response is not None else result.content
        payload["duration_ms"] = round(duration_s * 1000)
        replies = await self._fire(event, call.name, payload, call=call)
        context: list[str] = []
        for reply in replies:
            if reply.blocks:
                context.append(f"{event} hook feedback: {reply.block_reason}")
            elif reply.data is not None and reply.data.get("decision") == "block":
                context.append(f"{event} hook feedback: {reply.text('reason', top_level=True) or 'blocked'}")
            if reply.context:
                context.append(reply.context)
        output = None if failed else _replacement_output(replies, mcp=call.name.startswith("mcp__"))
        return AfterTool(output=output, context=(*context, *_notices(replies)), stop=_first_stop(replies))

    async def __call__(self, call: ToolCall) -> PermissionAnswer | None:
        """PermissionRequest: the call is about to be asked about; a hook may answer for the person."""
        payload: JsonObject = {"tool_name": call.name, "tool_input": call.arguments}
        replies = await self._fire("PermissionRequest", call.name, payload, call=call)
        stop = _first_stop(replies)
        if stop is not None:
            return PermissionAnswer(decision="deny", message=stop, stop=stop)
        answers = [answer for reply in replies if (answer := _permission_answer(reply)) is not None]
        denied = [answer for answer in answers if answer.decision == "deny"]
        if denied:
            return denied[0]
        return answers[-1] if answers else None

    # ---- running the handlers ---------------------------------------------------------------------------------

    async def _fire(
        self, event: HookEvent, subject: str, payload: JsonObject, *, call: ToolCall | None = None
    ) -> list[HookReply]:
        handlers = [hook for hook in self.hooks.handlers(event, subject) if self._applies(hook, call)]
        if not handlers:
            return []
        stdin = json.dumps({**self._common(event), **payload}, ensure_ascii=False).encode("utf-8")
        env = {**self.who.env, "CLAUDE_PROJECT_DIR": str(self.who.project_dir)}
        replies: list[HookReply | None] = [None] * len(handlers)

        async def run(index: int, hook: CommandHook) -> None:
            process = await run_command_hook(
                hook.command, stdin=stdin, cwd=self.who.cwd, env=env, timeout_s=hook.timeout_s
            )
            replies[index] = read_reply(hook, event, process)

        async with anyio.create_task_group() as group:
            for index, hook in enumerate(handlers):
                group.start_soon(run, index, hook)
        done = [reply for reply in replies if reply is not None]
        for reply in done:
            self._log(reply, subject)
        return done

    def _applies(self, hook: CommandHook, call: ToolCall | None) -> bool:
        if hook.condition is None or call is None:
            return True
        return condition_matches(hook.condition, call.name, call.arguments, cwd=self.who.cwd, home=self.who.home)

    def _common(self, event: HookEvent) -> JsonObject:
        who = self.who
        common: JsonObject = {
            "session_id": who.session_id,
            "transcript_path": str(who.transcript_path),
            "cwd": str(who.cwd),
            "permission_mode": who.permission_mode,
            "agent_id": who.agent_id,
            "agent_type": who.agent_type,
        }
        if who.effort is not None:
            common["effort"] = {"level": who.effort}
        common["hook_event_name"] = event
        return common

    def _log(self, reply: HookReply, subject: str) -> None:
        hook = reply.hook
        what = f"{reply.event} hook for {subject} ({hook.origin}: {hook.command!r})"
        if reply.problem is not None:
            logger.warning("%s failed: %s", what, reply.problem)
            self._note(f"{reply.event} hook `{_one_line(hook.command)}` failed: {reply.problem}")
        elif reply.blocks:
            logger.info("%s exited with 2: %s", what, reply.block_reason)
            self._note(f"{reply.event} hook `{_one_line(hook.command)}` exited with 2: {_one_line(reply.block_reason)}")
        else:
            logger.debug("%s finished (exit %s)", what, reply.process.exit_code)

    def _note(self, line: str) -> None:
        if self._report is not None:
            self._report(line)

    def _record_denial(self, call: ToolCall, reason: str) -> None:
        if self._denials is None:
            return
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        clipped = arguments if len(arguments) <= 120 else arguments[:120] + "…"
        self._denials.append(Denial(tool=call.name, arguments=clipped, reason=reason))


def _decision(reply: HookReply) -> str | None:
    decision = reply.specific().get("permissionDecision")
    if decision is None and reply.data is not None:  # the older top-level form
        decision = _LEGACY_DECISIONS.get(str(reply.data.get("decision")))
    return decision if decision in _PRECEDENCE else None


def _permission_answer(reply: HookReply) -> PermissionAnswer | None:
    if reply.blocks:
        return PermissionAnswer(decision="deny", message=reply.block_reason)
    decision = _object(reply.specific().get("decision"))
    if decision is None:
        return None
    behavior = decision.get("behavior")
    message = decision.get("message")
    text = clip(message) if isinstance(message, str) and message.strip() else "a PermissionRequest hook denied it"
    if behavior == "deny":
        stop = text if decision.get("interrupt") is True else None
        return PermissionAnswer(decision="deny", message=text, stop=stop)
    if behavior == "allow":
        return PermissionAnswer(decision="allow", arguments=_object(decision.get("updatedInput")))
    return None


def _replacement_output(replies: Sequence[HookReply], *, mcp: bool) -> str | None:
    for reply in reversed(replies):
        specific = reply.specific()
        value: Any = specific.get("updatedToolOutput")
        if value is None and mcp:
            value = specific.get("updatedMCPToolOutput")
        if isinstance(value, str):
            return value
        if mcp and isinstance(value, list):
            blocks = cast("list[Any]", value)
            texts = [str(b.get("text", "")) for b in blocks if isinstance(b, dict)]  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            return "\n".join(texts)
        if value is not None:
            logger.info("a PostToolUse hook's updatedToolOutput does not have the tool's output shape; ignored")
    return None


def _first_stop(replies: Sequence[HookReply]) -> str | None:
    return next((reply.stop_reason for reply in replies if reply.stops), None)


def _notices(replies: Sequence[HookReply]) -> tuple[str, ...]:
    return tuple(notice for reply in replies if (notice := reply.notice) is not None)


def _object(value: object) -> JsonObject | None:
    return cast("JsonObject", value) if isinstance(value, dict) else None


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 120 else flat[:120] + "…"
