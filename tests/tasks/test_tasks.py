"""TaskManager on its own, without MCP: attaching a foreground call, asking, time limits as cancel scopes while a
question is open, the one finish path, outcomes as data (old transcripts included), and places under
`--max-concurrent`."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent.loop import RunResult, TurnStarted
from mcp_subagents.core.messages import Usage
from mcp_subagents.core.principals import LOCAL_PRINCIPAL
from mcp_subagents.permissions.asking import DECLINED, Answer, PermissionQuestion, allowed
from mcp_subagents.render import outcome_text
from mcp_subagents.render.status import OUTPUT_FILE_TEXTS
from mcp_subagents.tasks.manager import FINISHED_SHOWN, TaskManager
from mcp_subagents.tasks.record import Listener, TaskEvent, TaskLimits, TaskRecord

pytestmark = pytest.mark.anyio

QUESTION = PermissionQuestion(agent="general-purpose", tool="Bash", arguments={"command": "make"}, reason="rule")


def result(text: str = "done") -> RunResult:
    return RunResult(text=text, stop="completed", messages=[], usage=Usage(), turns=1, tool_uses=0, duration_s=0.0)


@asynccontextmanager
async def manager(tmp_path: Path, **limits: float) -> AsyncGenerator[TaskManager]:
    tasks = TaskManager(state_dir=tmp_path / "state", limits=replace(TaskLimits(), **limits), texts=OUTPUT_FILE_TEXTS)
    async with tasks.running():
        yield tasks


def start(tasks: TaskManager, job: Callable[[TaskRecord, Listener], Awaitable[RunResult]]) -> TaskRecord:
    return tasks.start(agent="general-purpose", description="test", job=job)


async def test_a_question_waits_on_the_board_with_the_task_waiting_until_someone_answers(tmp_path: Path) -> None:
    answers: list[Answer] = []
    seen: list[TaskEvent] = []

    async def job(record: TaskRecord, listener: Listener) -> RunResult:
        await listener(TurnStarted(turn=1, max_turns=5))
        answers.append(await tasks.ask(record, QUESTION))
        return result()

    async def listener(event: TaskEvent) -> None:
        seen.append(event)

    async with manager(tmp_path) as tasks:
        record = start(tasks, job)
        with tasks.attach(record, listener), anyio.fail_after(5):
            while not tasks.open_questions(record):
                await anyio.wait_all_tasks_blocked()
            [question] = tasks.open_questions(record)
            assert record.state == "waiting" and question.question == QUESTION and question.task_id == record.id
            assert tasks.answer(record, question.id, allowed(by="ann", via="a test")) is question
            assert tasks.answer(record, question.id, DECLINED) is None  # the first answer wins
            await tasks.wait(record, 5)
    assert answers == [Answer(kind="allowed", by="ann", via="a test")]
    assert [type(event).__name__ for event in seen] == ["TurnStarted", "QuestionAsked", "QuestionAnswered"]
    lines = [json.loads(line) for line in tasks.transcript_path(record.id).read_text().splitlines()]
    asked = next(line for line in lines if line["type"] == "question")
    answered = next(line for line in lines if line["type"] == "answer")
    assert asked["tool"] == "Bash" and asked["arguments"] == {"command": "make"} and asked["id"] == question.id
    assert (answered["id"], answered["kind"], answered["by"], answered["via"]) == (
        question.id,
        "allowed",
        "ann",
        "a test",
    )
    assert (
        "[waiting] waiting for you: Subagent 'general-purpose' asks to run Bash: make" in record.output_path.read_text()
    )


async def test_an_unanswered_question_times_out_and_the_next_is_denied_until_a_host_calls_again(tmp_path: Path) -> None:
    answers: list[Answer] = []
    asked_third, go_on = anyio.Event(), anyio.Event()

    async def job(record: TaskRecord, _listener: Listener) -> RunResult:
        answers.append(await tasks.ask(record, QUESTION))  # nobody answers: times out
        answers.append(await tasks.ask(record, QUESTION))  # not asked at all: the person is away
        await go_on.wait()
        asked_third.set()
        answers.append(await tasks.ask(record, QUESTION))  # a host called about the task since: asked again
        return result()

    async def ignore(_event: TaskEvent) -> None:
        pass

    async with manager(tmp_path, ask_timeout=0.2) as tasks:
        record = start(tasks, job)
        with anyio.fail_after(5):
            while len(answers) < 2:
                await anyio.wait_all_tasks_blocked()
            with tasks.attach(record, ignore):
                go_on.set()
                await asked_third.wait()
            await record.done.wait()
    assert answers == [
        Answer(kind="unanswered", waited_s=0.2),
        Answer(kind="unanswered"),
        Answer(kind="unanswered", waited_s=0.2),
    ]
    assert "within 0.2 s (--ask-timeout)" in answers[0].why_not()
    assert "an earlier permission question" in answers[1].why_not()


async def test_waiting_for_the_person_stops_the_idle_and_the_wall_clock_limits(tmp_path: Path) -> None:
    async def asks(record: TaskRecord, _listener: Listener) -> RunResult:
        answer = await tasks.ask(record, QUESTION)
        return result(answer.why_not())

    async with manager(tmp_path, idle_timeout=0.1, ask_timeout=0.5, task_timeout=0.3) as tasks:
        patient = start(tasks, asks)
        with anyio.fail_after(5):
            await patient.done.wait()
    # Neither the idle limit (0.1 s) nor the wall clock (0.3 s) fired while the question waited 0.5 s.
    assert patient.outcome is not None and patient.outcome.state == "completed"
    assert patient.outcome.text == "Nobody answered the permission question within 0.5 s (--ask-timeout)."

    async def works(_record: TaskRecord, _listener: Listener) -> RunResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with manager(tmp_path, task_timeout=0.3) as tasks:
        stuck = start(tasks, works)
        with anyio.fail_after(5):
            await stuck.done.wait()
    assert stuck.outcome is not None and stuck.outcome.failure == "wall_clock" and stuck.outcome.limit_s == 0.3


async def test_a_task_stopped_in_the_queue_finishes_once(tmp_path: Path) -> None:
    release, began = anyio.Event(), anyio.Event()

    async def blocking(_record: TaskRecord, _listener: Listener) -> RunResult:
        began.set()
        await release.wait()
        return result()

    async with manager(tmp_path, max_concurrent=1) as tasks:
        running = start(tasks, blocking)
        queued = start(tasks, blocking)
        with anyio.fail_after(5):
            await began.wait()
        assert tasks.queue_position(queued) == (1, 1)
        await tasks.stop(queued.id)
        release.set()
        await tasks.wait(running, 5)
    assert queued.state == "stopped" and queued.outcome is not None and queued.outcome.counts is not None
    ends = [line for line in queued.transcript.path.read_text(encoding="utf-8").splitlines() if '"end"' in line]
    assert len(ends) == 1 and json.loads(ends[0])["outcome"]["state"] == "stopped"
    assert running.state == "completed"


async def test_the_output_file_keeps_the_whole_text_the_result_points_to(tmp_path: Path) -> None:
    long_text = "".join(f"line {i}\n" for i in range(100))

    async def job(_record: TaskRecord, _listener: Listener) -> RunResult:
        return result(long_text)

    async with manager(tmp_path) as tasks:
        record = start(tasks, job)
        await tasks.wait(record, 5)
    assert record.outcome is not None
    shown = outcome_text(record, record.outcome, max_chars=50)
    assert "line 99" not in shown and f"The full text is in {record.output_path}" in shown
    assert long_text in record.output_path.read_text(encoding="utf-8")


async def test_an_old_transcript_with_a_rendered_result_still_reports(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "tasks"
    folder.mkdir(parents=True)
    header = {"type": "header", "task_id": "old1", "agent": "Explore", "description": "look", "created": 1.0}
    end = {"type": "end", "state": "completed", "result": '<task_result agent="Explore">found it</task_result>'}
    (folder / "old1.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(end) + "\n", encoding="utf-8")
    async with manager(tmp_path) as tasks:
        record = tasks.get("old1", principal=LOCAL_PRINCIPAL)
    assert record.state == "completed" and record.outcome is not None
    assert outcome_text(record, record.outcome, max_chars=10) == '<task_result agent="Explore">found it</task_result>'


async def test_a_finished_task_leaves_memory_and_is_read_back_from_its_transcript(tmp_path: Path) -> None:
    """Only a finished task's transcript remains: memory keeps nothing of it, and lookups read the file."""

    async def job(_record: TaskRecord, _listener: Listener) -> RunResult:
        return result("the answer")

    async with manager(tmp_path) as tasks:
        record = start(tasks, job)
        await tasks.wait(record, 5)
        assert tasks._records == {}  # pyright: ignore[reportPrivateUsage]
        again = tasks.get(record.id, principal=LOCAL_PRINCIPAL)
    assert again is not record
    assert (again.id, again.agent, again.description, again.owner) == (record.id, "general-purpose", "test", "local")
    assert again.state == record.state == "completed" and again.finished
    assert again.outcome == record.outcome
    assert again.outcome is not None and again.outcome.text == "the answer"


async def test_the_tasks_list_shows_each_persons_newest_finished_tasks(tmp_path: Path) -> None:
    """The process keeps only the newest `FINISHED_SHOWN` finished tasks of each person for the list; the older ones
    are still there for TaskOutput, read from their transcripts."""

    async def job(_record: TaskRecord, _listener: Listener) -> RunResult:
        return result()

    async with manager(tmp_path) as tasks:
        started = [
            tasks.start(agent="general-purpose", description=f"{owner} {number}", job=job, owner=owner)
            for owner, count in (("ann", FINISHED_SHOWN + 5), ("bob", 3))
            for number in range(count)
        ]
        for record in started:
            await tasks.wait(record, 5)
        anns, bobs = tasks.tasks_of("ann"), tasks.tasks_of("bob")
        oldest = tasks.get(started[0].id, principal="ann")
    assert [record.description for record in anns] == [f"ann {n}" for n in reversed(range(5, FINISHED_SHOWN + 5))]
    assert [record.description for record in bobs] == ["bob 2", "bob 1", "bob 0"]
    assert all(record.finished for record in anns + bobs)
    assert oldest.description == "ann 0" and oldest.outcome is not None and oldest.outcome.text == "done"


async def test_a_finished_tasks_nested_tasks_are_read_from_its_transcript_also_by_a_later_process(
    tmp_path: Path,
) -> None:
    async def child_job(_record: TaskRecord, _listener: Listener) -> RunResult:
        return result("child")

    async def parent_job(record: TaskRecord, _listener: Listener) -> RunResult:
        for number in range(2):
            child = tasks.start(agent="Explore", description=f"child {number}", job=child_job, parent=record)
            await tasks.wait(child, 5)
        return result("parent")

    async with manager(tmp_path) as tasks:
        parent = start(tasks, parent_job)
        await tasks.wait(parent, 5)
        here = [(level, child.description) for level, child in tasks.subtasks(tasks.get(parent.id, principal="local"))]
    async with manager(tmp_path) as later:
        read_back = later.get(parent.id, principal="local")
        there = [(level, child.description) for level, child in later.subtasks(read_back)]
    assert here == there == [(1, "child 0"), (1, "child 1")]


async def test_queued_tasks_run_in_the_order_they_were_launched_each_with_its_files(tmp_path: Path) -> None:
    """Each task's files are created in a worker thread, in whatever order the threads finish; the queue order and
    the transcript's first line do not depend on it."""
    order: list[str] = []

    async def job(record: TaskRecord, _listener: Listener) -> RunResult:
        first = record.transcript.path.read_text(encoding="utf-8").splitlines()[0]
        assert json.loads(first)["type"] == "header"
        assert record.output_path.read_text(encoding="utf-8").startswith(f"[task {record.id}]")
        order.append(record.id)
        return result()

    async with manager(tmp_path, max_concurrent=1) as tasks:
        launched = [start(tasks, job) for _ in range(8)]
        for record in launched:
            await tasks.wait(record, 5)
    assert order == [record.id for record in launched]


async def test_places_go_in_order_a_lent_one_to_one_nested_task_at_a_time_and_a_stopped_waiter_loses_its_turn() -> None:
    from mcp_subagents.tasks.slots import Lender, Slots

    slots, parent = Slots(1), Lender()
    root = slots.take_now()
    assert root is not None and slots.take_now() is None  # the only shared place is the root's
    first = slots.take_now(parent)
    assert first is not None and first.lender is parent  # the root lends it to one nested task...
    order: list[str] = []

    async def wait(name: str, lender: Lender | None, scope: anyio.CancelScope) -> None:
        with scope:
            grant = await slots.take(lender)
            order.append(name)
            slots.give_back(grant)

    scopes = {name: anyio.CancelScope() for name in ("second", "stopped", "other root")}
    async with anyio.create_task_group() as group:
        group.start_soon(wait, "second", parent, scopes["second"])  # ...and its sibling waits
        group.start_soon(wait, "stopped", parent, scopes["stopped"])
        group.start_soon(wait, "other root", None, scopes["other root"])
        await anyio.wait_all_tasks_blocked()
        scopes["stopped"].cancel()
        await anyio.wait_all_tasks_blocked()
        slots.give_back(first)  # the lent place passes to the next nested task that still waits
        await anyio.wait_all_tasks_blocked()
        assert order == ["second"] and not parent.busy
        slots.give_back(root)
    assert order == ["second", "other root"] and slots.used == 0
