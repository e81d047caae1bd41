"""`mcp-subagents tasks list | show | tail | stop | answer`: the tasks of a state directory, from the terminal.

Everything a model, a host or a project file wrote (descriptions, agent and tool names, answers, the output file) is
printed inert: an escape sequence in it shows as `\\x1b` instead of acting on the terminal. `--json` is already
inert: JSON escapes every character outside ASCII."""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.errors import SubagentsError
from ..models.pricing import format_usd
from ..render import outcome_text
from ..render.envelopes import RecordedTask, recorded_task, stall_label, stall_text
from ..render.inert import inert
from ..render.questions import permission_message, waiting_text
from ..render.rows import DEFAULT_STALL_AFTER, task_row
from ..render.tree import snapshot_entry, tree_lines
from ..tasks.control import WHO, AnswerRequest, ControlError, request_answer, request_stop
from ..tasks.files import (
    TaskLookupError,
    TaskSnapshot,
    find_task,
    list_tasks,
    output_path,
    read_task,
)
from ..tasks.tree import TreeReader

if TYPE_CHECKING:
    from ..team.folder import TeamFolder

FOLLOW_INTERVAL = 0.2
"""Seconds between looks at a followed task's files (`tail -f` does the same)."""
STOP_WAIT = 10.0


def tasks_command(
    action: str,
    state_dir: Path,
    *,
    task_id: str | None,
    as_json: bool,
    out: TextIO,
    answer: tuple[str | None, str | None] = (None, None),
    stall_after: float = DEFAULT_STALL_AFTER,
    database_url: str | None = None,
) -> int:
    """Run one `tasks` action; returns the exit status. `answer`: (allow|always|deny, question id or None);
    `stall_after`: `--stall-after`, when a running task is shown as stalled; `database_url`: a team's tasks, on
    whichever replica they run (instead of the state directory's)."""
    if database_url is None:
        return _action(
            action, state_dir, None, task_id=task_id, as_json=as_json, out=out, answer=answer, stall_after=stall_after
        )
    from ..team.folder import TeamFolder

    try:
        with TeamFolder(database_url) as team:
            team.sync()
            return _action(
                action,
                team.state_dir,
                team,
                task_id=task_id,
                as_json=as_json,
                out=out,
                answer=answer,
                stall_after=stall_after,
            )
    except SubagentsError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 1


def _action(
    action: str,
    state_dir: Path,
    team: TeamFolder | None,
    *,
    task_id: str | None,
    as_json: bool,
    out: TextIO,
    answer: tuple[str | None, str | None],
    stall_after: float,
) -> int:
    try:
        match action:
            case "answer":
                snapshot = _snapshot(state_dir, task_id)
                return _answer(state_dir, team, snapshot, answer[0] or "deny", answer[1], out=out)
            case "list":
                where = "the team's database" if team is not None else str(state_dir)
                return _list(state_dir, as_json=as_json, out=out, stall_after=stall_after, where=where)
            case "show":
                snapshot = _snapshot(state_dir, task_id)
                return _show(snapshot, out=out, stall_after=stall_after, tree=_tree(state_dir, snapshot))
            case "tail":
                return _tail(state_dir, team, task_id, out=out)
            case _:
                return _stop(state_dir, team, task_id, out=out)
    except TaskLookupError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 1


def _snapshot(state_dir: Path, task_id: str | None) -> TaskSnapshot:
    path = find_task(state_dir, task_id or "")
    snapshot = read_task(path)
    if snapshot is None:
        raise TaskLookupError(f"{path} has no task header")
    return snapshot


def _list(state_dir: Path, *, as_json: bool, out: TextIO, stall_after: float, where: str) -> int:
    snapshots = list_tasks(state_dir)
    if as_json:
        rows = [task_row(snapshot, stall_after=stall_after) for snapshot in snapshots]
        print(json.dumps(rows, indent=2), file=out)
        return 0
    if not snapshots:
        print(f"No tasks in {where}.", file=out)
        return 0
    columns = ("ID", "STATE", "AGENT", "MODEL", "TURNS", "TOKENS", "COST", "ELAPSED", "DESCRIPTION")
    rows = [columns] + [
        (
            s.task_id,
            _field(s.state),
            _field(s.header.agent),
            _field(s.header.model or "-"),
            str(s.turns),
            f"{s.tokens:,}",
            "-" if s.cost_usd is None else format_usd(s.cost_usd),
            _duration(s.elapsed_s),
            _field(s.header.description) + _flags(s, stall_after),
        )
        for s in snapshots
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1], file=out)
    return 0


def _flags(snapshot: TaskSnapshot, stall_after: float) -> str:
    """What the list adds after a task's description: the question it waits on, or its stall."""
    if snapshot.waiting is not None:
        return f"  [{waiting_text(snapshot.waiting.question)}]"
    stall = snapshot.stall(stall_after)
    return "" if stall is None else f"  [{stall_label(stall)}: {stall_text(stall)}]"


def _tree(state_dir: Path, snapshot: TaskSnapshot) -> list[str]:
    """The lines `tasks show` gives the nested tasks: how many, and each with its figures (its subtree's)."""
    subtasks = TreeReader(state_dir).subtasks(snapshot.task_id)
    if not subtasks:
        return []
    outcome = snapshot.outcome
    nested = outcome.counts.nested if outcome is not None and outcome.counts is not None else None
    total = (
        f"; with them: {snapshot.turns + nested.turns} turns, {snapshot.tool_uses + nested.tool_uses} tool uses "
        "(the tokens and cost above include theirs)"
        if nested is not None and nested.tasks
        else " (their cost is in the figures above as they spend; their tokens once each ends)"
    )
    entries = tree_lines(snapshot_entry(level, child) for level, child in subtasks)
    return ["", f"nested tasks: {len(subtasks)}{total}", *(f"  {line}" for line in entries)]


def _show(
    snapshot: TaskSnapshot, *, out: TextIO, stall_after: float = DEFAULT_STALL_AFTER, tree: Sequence[str] = ()
) -> int:
    header = snapshot.header
    u = snapshot.usage
    cost = _cost_text(snapshot)
    lines = [
        f"task {header.task_id}  ({_field(header.agent)}: {_field(header.description)})",
        f"state: {_field(snapshot.state)}   owner: {_field(header.owner)}   model: {_field(header.model or 'unknown')}"
        + (f" (effort {_field(header.effort)})" if header.effort else ""),
        f"turns: {snapshot.turns}   tool uses: {snapshot.tool_uses}   tokens: {snapshot.tokens:,} "
        f"(input {u.input_tokens:,}, output {u.output_tokens:,}, cache write {u.cache_creation_tokens:,}, "
        f"cache read {u.cache_read_tokens:,})   cost: {cost}",
        f"created: {datetime.fromtimestamp(header.created):%Y-%m-%d %H:%M:%S}   "
        f"elapsed: {_duration(snapshot.elapsed_s)}",
    ]
    if header.model_note:
        lines.append(f"warning: {_field(header.model_note)}")
    if header.resumed_from:
        lines.append(f"resumed from: {_field(header.resumed_from)}")
    if snapshot.current_tools:
        lines.append(f"running now: {', '.join(_field(tool) for tool in snapshot.current_tools)}")
    if (stall := snapshot.stall(stall_after)) is not None:
        lines.append(f"{stall_label(stall)}: {stall_text(stall)}")
    if snapshot.waiting is not None:
        was = "was " if snapshot.state == "interrupted" else ""
        lines += ["", f"{was}{waiting_text(snapshot.waiting.question)}"]
        lines += [
            f"  {line}"
            for line in permission_message(snapshot.waiting.question, task_id=snapshot.waiting.task_id).splitlines()[2:]
        ]
        if not was:
            lines.append(f"  answer: mcp-subagents tasks answer {header.task_id} --allow | --always | --deny")
    transcript = snapshot.path
    lines += [*tree, f"output file: {output_path(transcript)}", f"transcript: {transcript}", ""]
    print("\n".join(lines), file=out)
    if snapshot.outcome is not None:
        print(inert(outcome_text(_record(snapshot, transcript), snapshot.outcome, max_chars=None)), file=out)
        return 1 if snapshot.outcome.is_error else 0
    print(inert(_read(output_path(transcript))[-4000:]), file=out, end="")
    return 0


def _cost_text(snapshot: TaskSnapshot) -> str:
    """What the task cost so far. Each model response's line in the transcript carries the cost of a priced model,
    so no cost after one means the model has no price; before the first response nothing is known yet (this said
    "has no price" for every running task until then)."""
    if snapshot.cost_usd is not None:
        return format_usd(snapshot.cost_usd)
    if snapshot.tokens == 0 and not snapshot.finished:
        return "none yet (no model response so far)"
    return f"tokens only ({_field(snapshot.header.model or 'the model')} has no price)"


def _tail(state_dir: Path, team: TeamFolder | None, task_id: str | None, *, out: TextIO) -> int:
    """Print the task's output file and follow it until the task ends; the exit status says how it ended."""
    path = find_task(state_dir, task_id or "")
    output = output_path(path)
    offset = 0
    while True:
        if team is not None:
            team.sync(path.stem)
        snapshot = read_task(path)  # before reading the output: an end seen here means the output is complete
        finished = snapshot is None or snapshot.finished
        text = _read(output)
        # A carriage return at the end may be the first half of a CRLF still being written: it waits for the rest.
        end = len(text) if finished or not text.endswith("\r") else len(text) - 1
        if end > offset:
            out.write(inert(text[offset:end]))
            out.flush()
            offset = end
        if finished:
            if snapshot is not None and snapshot.outcome is None:
                print(f"\n[task {snapshot.task_id} was interrupted: its server is gone]", file=out)
            return 0 if snapshot is not None and snapshot.state == "completed" else 1
        time.sleep(FOLLOW_INTERVAL)


def _stop(state_dir: Path, team: TeamFolder | None, task_id: str | None, *, out: TextIO) -> int:
    snapshot = _snapshot(state_dir, task_id)
    header = snapshot.header
    if snapshot.finished and (team is None or snapshot.outcome is not None):
        print(f"Task {header.task_id} ({_field(header.description)}) already ended: {snapshot.state}.", file=out)
        return 0
    try:
        if team is not None:
            team.stop(header.task_id)
        else:
            request_stop(state_dir, header.control, header.task_id)
    except ControlError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 1
    deadline = time.monotonic() + STOP_WAIT
    while time.monotonic() < deadline:
        if team is not None:
            team.sync(header.task_id)
        ended = read_task(snapshot.path)
        if ended is not None and ended.finished:
            print(
                f"Stopped task {header.task_id} ({_field(header.description)}) after {ended.turns} turn(s); "
                f'continue it with Task resume: "{header.task_id}".',
                file=out,
            )
            return 0
        time.sleep(FOLLOW_INTERVAL)
    print(f"Stop requested for task {header.task_id}, but it has not ended within {STOP_WAIT:g} s.", file=out)
    return 1


def _answer(
    state_dir: Path,
    team: TeamFolder | None,
    snapshot: TaskSnapshot,
    choice: str,
    question_id: str | None,
    *,
    out: TextIO,
) -> int:
    header, waiting = snapshot.header, snapshot.waiting
    if snapshot.finished or waiting is None:
        print(f"mcp-subagents: task {header.task_id} waits on no question (it is {snapshot.state}).", file=sys.stderr)
        return 1
    request = AnswerRequest(header.task_id, question_id or waiting.id, choice, "cli", os_user())
    try:
        if team is not None:
            team.answer(request)
        else:
            request_answer(state_dir, header.control, request)
    except ControlError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 1
    deadline = time.monotonic() + STOP_WAIT
    while time.monotonic() < deadline:
        if team is not None:
            team.sync(header.task_id)
        now = read_task(snapshot.path)
        if now is None or now.finished or now.waiting is None or now.waiting.id != request.question_id:
            done = {"allow": "Allowed", "always": "Always allowed", "deny": "Denied"}[choice]
            print(f"{done}: {waiting_text(waiting.question).removeprefix('waiting for you: ')}", file=out)
            return 0
        time.sleep(FOLLOW_INTERVAL)
    print(
        f"The answer was sent to task {header.task_id}'s server, which has not taken it within {STOP_WAIT:g} s "
        "(the question may have closed meanwhile).",
        file=out,
    )
    return 1


def os_user() -> str:
    """The name of the user running this command, as answers record who gave them (the dashboard's and `run`'s
    too); a name the control channel would not carry becomes `uid-N`."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = f"uid-{os.getuid()}"
    return name if WHO.fullmatch(name) else f"uid-{os.getuid()}"


def _record(snapshot: TaskSnapshot, transcript: Path) -> RecordedTask:
    return recorded_task(snapshot.header, output_path(transcript))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _field(text: str) -> str:
    """A one-line field of a task (a name, a description) as printed: inert, newlines included."""
    return inert(text, one_line=True)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
