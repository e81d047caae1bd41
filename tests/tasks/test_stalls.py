"""Stuck or looping tasks: the same call three times in a row and silence past `--stall-after` are told to the
task's listeners and written to its files, a task waiting for the person is never stalled, and `--stall-timeout`
stops a task stalled that long with a reason that says which stall."""

from __future__ import annotations

import io
import re
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent.loop import RunResult, ToolStarted, TurnStarted
from mcp_subagents.cli.terminal import StatusLine
from mcp_subagents.core.messages import ToolCall, Usage
from mcp_subagents.permissions.asking import allowed
from mcp_subagents.render import outcome_text
from mcp_subagents.render.status import OUTPUT_FILE_TEXTS
from mcp_subagents.tasks.manager import TaskManager
from mcp_subagents.tasks.record import Listener, Stalled, TaskEvent, TaskLimits, TaskRecord
from mcp_subagents.tasks.stalls import stall_of
from tests.tasks.test_tasks import QUESTION

pytestmark = pytest.mark.anyio

READ = ToolCall(id="c1", name="Read", arguments={"file_path": "/a", "limit": 10})


def done() -> RunResult:
    return RunResult(text="done", stop="completed", messages=[], usage=Usage(), turns=1, tool_uses=0, duration_s=0.0)


@asynccontextmanager
async def manager(tmp_path: Path, **limits: float) -> AsyncGenerator[TaskManager]:
    tasks = TaskManager(state_dir=tmp_path / "state", limits=replace(TaskLimits(), **limits), texts=OUTPUT_FILE_TEXTS)
    async with tasks.running():
        yield tasks


class Notices:
    """The `Stalled` notices a listener received, with an event set at the first."""

    def __init__(self) -> None:
        self.seen: list[Stalled] = []
        self.first = anyio.Event()

    async def __call__(self, event: TaskEvent) -> None:
        if isinstance(event, Stalled):
            self.seen.append(event)
            self.first.set()


async def test_the_same_call_three_times_in_a_row_flags_the_task_as_looping(tmp_path: Path) -> None:
    notices, release = Notices(), anyio.Event()
    seen_while_running: list[object] = []
    status_lines: list[str] = []

    async def job(record: TaskRecord, listener: Listener) -> RunResult:
        await listener(TurnStarted(turn=1, max_turns=9))
        await listener(ToolStarted(turn=1, call=READ))
        await listener(ToolStarted(turn=1, call=ToolCall(id="c2", name="Read", arguments={"file_path": "/b"})))
        for turn in range(2, 5):  # the same arguments in another key order are the same call
            await listener(
                ToolStarted(
                    turn=turn, call=ToolCall(id=f"r{turn}", name="Read", arguments={"limit": 10, "file_path": "/a"})
                )
            )
        seen_while_running.append(stall_of(record, after=0))
        status_lines.append(StatusLine(record, io.StringIO()).text())
        await release.wait()
        return done()

    async with manager(tmp_path) as tasks:
        record = tasks.start(agent="general-purpose", description="loops", job=job)
        record.resources.listeners.append(notices)
        with anyio.fail_after(5):
            await notices.first.wait()
            release.set()
            await tasks.wait(record, 5)
    [notice] = notices.seen  # told once, when the third identical call started
    assert notice.stall.kind == "repeating" and notice.stall.tool == "Read" and notice.stall.repeats == 3
    [stall] = seen_while_running
    assert stall is not None and getattr(stall, "repeats", 0) == 3
    assert " · looping · " in status_lines[0]  # `run`'s status line on a terminal
    assert "[looping] it called Read with the same arguments 3 times in a row" in record.output_path.read_text()
    assert '"kind": "stalled"' in record.transcript.path.read_text()  # the dashboard shows it from there
    assert stall_of(record, after=0) is None  # a finished task is not stalled


async def test_silence_past_stall_after_is_told_once_and_a_new_event_ends_it(tmp_path: Path) -> None:
    notices, release = Notices(), anyio.Event()

    async def job(_record: TaskRecord, listener: Listener) -> RunResult:
        await listener(ToolStarted(turn=1, call=ToolCall(id="b", name="Bash", arguments={"command": "make"})))
        await release.wait()
        return done()

    async with manager(tmp_path, stall_after=0.1) as tasks:
        record = tasks.start(agent="general-purpose", description="quiet", job=job)
        record.resources.listeners.append(notices)
        with anyio.fail_after(5):
            await notices.first.wait()
            stall = stall_of(record, after=0.1)
            assert stall is not None and stall.kind == "silent" and stall.tool == "Bash"
            release.set()
            await tasks.wait(record, 5)
    assert len(notices.seen) == 1 and notices.seen[0].stall.seconds >= 0.1
    assert re.search(
        r"\[stalled\] no model reply or tool result for \d\.\d s while Bash runs", record.output_path.read_text()
    )
    assert record.outcome is not None and record.outcome.state == "completed"


async def test_a_task_waiting_for_the_persons_answer_is_not_stalled(tmp_path: Path) -> None:
    async def job(record: TaskRecord, _listener: Listener) -> RunResult:
        await tasks.ask(record, QUESTION)
        return done()

    async with manager(tmp_path, stall_after=0.05, stall_timeout=0.1) as tasks:
        record = tasks.start(agent="general-purpose", description="asks", job=job)
        with anyio.fail_after(5):
            while not tasks.open_questions(record):
                await anyio.wait_all_tasks_blocked()
            assert stall_of(record, after=0.05, now=time.monotonic() + 3600) is None  # an hour later: still waiting
            await anyio.sleep(0.3)  # longer than --stall-timeout: the wait must not be taken for a stall
            assert not record.finished
            [question] = tasks.open_questions(record)
            tasks.answer(record, question.id, allowed(by="ann"))
            await tasks.wait(record, 5)
    assert record.outcome is not None and record.outcome.state == "completed"


async def test_stall_timeout_stops_a_looping_task_and_says_why(tmp_path: Path) -> None:
    async def job(_record: TaskRecord, listener: Listener) -> RunResult:
        for turn in range(1, 4):
            await listener(TurnStarted(turn=turn, max_turns=50))
            await listener(ToolStarted(turn=turn, call=READ))
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with manager(tmp_path, stall_timeout=0.2) as tasks:
        record = tasks.start(agent="general-purpose", description="loops", job=job)
        with anyio.fail_after(5):
            await record.done.wait()
    outcome = record.outcome
    assert outcome is not None and outcome.state == "failed" and outcome.failure == "stalled"
    assert outcome.stall is not None and outcome.stall.kind == "repeating" and outcome.limit_s == 0.2
    text = outcome_text(record, outcome, max_chars=None)
    assert "Task stopped after 0.2 s stalled (--stall-timeout): it called Read with the same arguments 3 times" in text


async def test_stall_timeout_stops_a_silent_task_even_without_stall_after(tmp_path: Path) -> None:
    async def job(_record: TaskRecord, _listener: Listener) -> RunResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with manager(tmp_path, stall_after=0, stall_timeout=0.2) as tasks:
        record = tasks.start(agent="general-purpose", description="silent", job=job)
        with anyio.fail_after(5):
            await record.done.wait()
    outcome = record.outcome
    assert outcome is not None and outcome.failure == "stalled" and outcome.stall is not None
    assert outcome.stall.kind == "silent" and outcome.stall.seconds >= 0.2
    text = outcome_text(record, outcome, max_chars=None)
    assert re.search(r"stalled \(--stall-timeout\): no model reply or tool result for \d\.\d s<", text)
