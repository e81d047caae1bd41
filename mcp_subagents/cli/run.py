"""`mcp-subagents run`: one subagent from the shell, with a live status line, its permission questions asked at the
terminal (when stdin is one), Ctrl-C that stops the task cleanly, and the result written for a person (or, with
`--raw`, the envelope a host gets). Without a terminal on stdin a question waits, as a background task's does, for
`mcp-subagents tasks answer` or the dashboard, until --ask-timeout."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from contextlib import ExitStack

import anyio

from ..config.settings import Settings
from ..core.errors import ConfigError, SubagentsError
from ..core.processes import harden_server_process, kill_descendants
from ..render import outcome_text, task_error
from ..render.inert import inert
from ..runtime.request import TaskRequest
from ..runtime.service import Subagents
from ..tasks.files import first_line
from ..tasks.record import TaskRecord
from .tasks import os_user
from .terminal import PlainProgress, StatusLine, TerminalQuestions, person_report, resume_hint

INTERRUPTED = 130
"""The exit status of a command ended by Ctrl-C, as shells report it."""
RUN_DESCRIPTION_CHARS = 60
"""How much of the prompt's first line labels a `run` task in `tasks list` and the dashboard."""


def run_command(settings: Settings, words: Sequence[str], *, resume: str | None, raw: bool) -> int:
    if resume is not None:
        if len(words) != 1:
            return _usage('with --resume, give only the prompt: mcp-subagents run --resume ID "PROMPT"')
        agent, prompt = None, words[0]
    elif len(words) != 2:
        return _usage('give the agent and the prompt: mcp-subagents run AGENT "PROMPT"')
    else:
        agent, prompt = words
    harden_server_process()
    try:
        return anyio.run(_run, settings, agent, prompt, resume, raw)
    except KeyboardInterrupt:  # Ctrl-C before the task started
        print("mcp-subagents: cancelled", file=sys.stderr)
        return INTERRUPTED
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 2
    finally:
        kill_descendants()  # what the task's commands detached was re-parented to this process: it goes with it


def _usage(message: str) -> int:
    print(f"mcp-subagents run: {message} (see mcp-subagents run --help)", file=sys.stderr)
    return 2


async def _run(settings: Settings, agent: str | None, prompt: str, resume: str | None, raw: bool) -> int:
    err = sys.stderr
    app = Subagents(settings)
    async with app.running():
        # A host labels a task with a few words of its own; the prompt's first line is the closest a shell has.
        description = first_line(prompt, RUN_DESCRIPTION_CHARS) or "run from the shell"
        arguments = TaskRequest(description=description, prompt=prompt, subagent_type=agent, resume=resume)
        try:
            record = app.launch(arguments)
        except SubagentsError as exc:
            if raw:
                print(inert(task_error(agent or "", exc.message)))
            else:
                print(f"mcp-subagents: {inert(exc.message)}", file=err)
            return 1
        stall_after = app.settings.stall_after
        progress = StatusLine(record, err, stall_after=stall_after) if err.isatty() else PlainProgress(err)
        stop_requests = await _follow(app, record, progress)
        if isinstance(progress, StatusLine):
            progress.clear()
        outcome = record.outcome
        if stop_requests and (outcome is None or outcome.state == "stopped"):
            print(resume_hint(record), file=err)
            return INTERRUPTED
        assert outcome is not None
        if raw:  # the envelope a host gets, but printed for a person: inert like the rest
            print(inert(outcome_text(record, outcome, max_chars=settings.max_result_chars)))
        else:
            answer, notes = person_report(record, outcome)
            if answer:
                print(answer)
            print(notes, file=err)
        return 1 if record.is_error else 0


async def _follow(app: Subagents, record: TaskRecord, progress: StatusLine | PlainProgress) -> int:
    """Show the task's progress and ask its questions at the terminal until it ends; Ctrl-C asks it to stop, a second
    Ctrl-C stops waiting. Returns how many times Ctrl-C was pressed."""
    asker = None
    if _stdin_is_a_terminal():
        asker = TerminalQuestions(app, record, sys.stderr, fd=sys.stdin.fileno(), by=os_user(), status=progress)
    stop_requests = 0
    with anyio.open_signal_receiver(signal.SIGINT) as signals, ExitStack() as watching:
        async with anyio.create_task_group() as group:

            async def on_ctrl_c() -> None:
                nonlocal stop_requests
                async for _ in signals:
                    stop_requests += 1
                    if stop_requests > 1:  # a second Ctrl-C: stop waiting for a clean stop
                        group.cancel_scope.cancel()
                        return
                    app.tasks.request_stop(record.id)

            group.start_soon(on_ctrl_c)
            if isinstance(progress, StatusLine):
                group.start_soon(progress.keep_drawing)
            watching.enter_context(app.tasks.watch(record, progress.on_event))
            if asker is not None:
                watching.enter_context(app.tasks.watch(record, asker.on_event))
                group.start_soon(asker.keep_asking)
            await record.done.wait()
            group.cancel_scope.cancel()
    return stop_requests


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # stdin was closed
        return False
