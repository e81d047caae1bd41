"""`mcp-subagents tasks list | show | tail | stop` in-process, over state directories written by real runs: a `run`
through the real Anthropic SDK and the fake API, and a server whose task another process (here: a thread) stops
through the control channel."""

from __future__ import annotations

import getpass
import json
import os
import stat
from pathlib import Path

import anyio
import pytest

from mcp_subagents.cli import main
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.tasks.control import ControlError, request_stop
from tests.fakes.fake_llm import FakeLLM, tool_use, turn
from tests.fakes.fake_llm import text as fake_text
from tests.support import make_settings, running_app, server_environment


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    code = exited.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().out


@pytest.fixture
def finished_run(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """A state directory holding one task that `mcp-subagents run` completed against the fake Anthropic API."""
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("hello\n", encoding="utf-8")
    environ = server_environment(tmp_path, fake=fake, state=state, MCP_SUBAGENTS_MODEL="claude-sonnet-4-6")
    for name, value in environ.items():
        if name != "PATH":
            monkeypatch.setenv(name, value)
    fake.push(
        turn(fake_text("Looking."), tool_use("Glob", {"pattern": "*.md"}), input_tokens=1000, output_tokens=100),
        turn(fake_text("There is one note."), input_tokens=2000, output_tokens=200),
    )
    code, _ = cli("run", "general-purpose", "What notes are here?", "--cwd", str(work), capsys=capsys)
    assert code == 0
    return state


def test_list_show_and_tail_a_finished_run(finished_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = str(finished_run)
    code, out = cli("tasks", "list", "--json", "--state-dir", state, capsys=capsys)
    (row,) = json.loads(out)
    assert code == 0 and row["state"] == "completed" and row["agent"] == "general-purpose"
    assert (row["turns"], row["tool_uses"], row["model"], row["effort"]) == (2, 1, "claude-sonnet-4-6", "medium")
    assert row["model_note"] == ""
    assert row["usage"]["input_tokens"] == 3000 and row["usage"]["output_tokens"] == 300
    assert row["cost_usd"] == pytest.approx((3000 * 3 + 300 * 15) / 1e6)  # $3 / $15 per million
    # Labelled by its prompt's first line, as a host labels its tasks (not "run from the shell", all alike).
    assert row["description"] == row["prompt"] == "What notes are here?"
    task_id = row["task_id"]

    code, out = cli("tasks", "list", "--state-dir", state, capsys=capsys)
    header, line = out.splitlines()
    assert header.split()[:8] == ["ID", "STATE", "AGENT", "MODEL", "TURNS", "TOKENS", "COST", "ELAPSED"]
    assert line.split()[:7] == [task_id, "completed", "general-purpose", "claude-sonnet-4-6", "2", "3,300", "$0.0135"]

    code, out = cli("tasks", "show", task_id[:8], "--state-dir", state, capsys=capsys)
    assert code == 0
    assert f"task {task_id}  (general-purpose: What notes are here?)" in out and "cost: $0.0135" in out
    assert '<task_result agent="general-purpose">There is one note.' in out and "cost_usd: 0.0135;" in out
    assert "model: claude-sonnet-4-6 (effort medium)" in out  # what ran, in the header and in the result's footer
    assert "; model: claude-sonnet-4-6; effort: medium; turns: 2;" in out

    code, out = cli("tasks", "tail", task_id, "--state-dir", state, capsys=capsys)
    assert code == 0
    assert "[turn 1] tool Glob" in out and out.rstrip().endswith("</usage>")


def test_unknown_or_ambiguous_ids_are_clear_errors(
    finished_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (finished_run / "tasks" / "aaaaaa01.jsonl").write_text("", encoding="utf-8")
    (finished_run / "tasks" / "aaaaaa02.jsonl").write_text("", encoding="utf-8")
    for task_id, message in (
        ("0123456789abcdef", "No task 0123456789abcdef"),
        ("aaaaaa", "2 tasks start with aaaaaa"),
        ("../secrets", "'../secrets' is not a task id"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["tasks", "show", task_id, "--state-dir", str(finished_run)])
        assert exited.value.code == 1 and message in capsys.readouterr().err
    code, out = cli("tasks", "list", "--state-dir", str(tmp_path / "nothing"), capsys=capsys)
    assert code == 0 and out.startswith("No tasks in")


@pytest.mark.anyio
async def test_tail_follows_a_running_task_and_stop_reaches_the_server_that_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path)
    asked_twice, release = anyio.Event(), anyio.Event()
    calls = 0

    async def respond(_request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return tool_call("Glob", {"pattern": "*"})
        asked_twice.set()
        await release.wait()  # until stopped
        return text("never")

    async with running_app(settings, model=FunctionModel(respond)) as app:
        record = app.launch(TaskRequest(description="long job", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await asked_twice.wait()
        fifo = settings.state_dir / "control" / str(app.tasks.control_name)
        assert stat.S_ISFIFO(fifo.stat().st_mode) and stat.S_IMODE(fifo.stat().st_mode) == 0o600
        assert stat.S_IMODE(fifo.parent.stat().st_mode) == 0o700

        state = str(settings.state_dir)
        tail = await anyio.to_thread.run_sync(_start_thread, ["tasks", "tail", record.id, "--state-dir", state])
        code, out = await anyio.to_thread.run_sync(
            _run_main, ["tasks", "stop", record.id, "--state-dir", str(settings.state_dir)]
        )
        assert code == 0 and out.startswith(f"Stopped task {record.id} (long job) after 2 turn(s)")
        assert record.state == "stopped"
        with anyio.fail_after(10):
            tail_code, tail_out = await anyio.to_thread.run_sync(tail.result)
        assert tail_code == 1  # stopped is not a success
        assert "[turn 1] tool Glob" in tail_out and f"Task {record.id} was stopped after" in tail_out
    capsys.readouterr()


@pytest.mark.anyio
async def test_tasks_answer_reaches_the_server_whose_task_waits_and_records_who_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path, ask_timeout=30)
    assert settings.cwd is not None
    replies = iter([tool_call("Bash", {"command": "echo yes > answered.txt"}), text("done")])
    model = FunctionModel(lambda _request: next(replies))
    state = str(settings.state_dir)
    async with running_app(settings, model=model) as app:
        record = app.launch(TaskRequest(description="needs a yes", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.resources.questions.wait_for_new()
        listed = await anyio.to_thread.run_sync(_run_main, ["tasks", "list", "--state-dir", state])
        shown = await anyio.to_thread.run_sync(_run_main, ["tasks", "show", record.id, "--state-dir", state])
        answered = await anyio.to_thread.run_sync(
            _run_main, ["tasks", "answer", record.id, "--allow", "--state-dir", state]
        )
        assert await app.tasks.wait(record, 10)
    assert "waiting" in listed[1] and "waiting for you: Subagent 'general-purpose' asks to run Bash" in listed[1]
    assert f"answer: mcp-subagents tasks answer {record.id} --allow | --always | --deny" in shown[1]
    assert answered == (0, "Allowed: Subagent 'general-purpose' asks to run Bash: echo yes > answered.txt\n")
    assert record.state == "completed" and (settings.cwd / "answered.txt").read_text(encoding="utf-8") == "yes\n"
    lines = [json.loads(line) for line in app.tasks.transcript_path(record.id).read_text().splitlines()]
    answer = next(line for line in lines if line["type"] == "answer")
    assert (answer["kind"], answer["by"], answer["via"]) == ("allowed", getpass.getuser(), "mcp-subagents tasks answer")
    code, _ = await anyio.to_thread.run_sync(_run_main, ["tasks", "answer", record.id, "--deny", "--state-dir", state])
    assert code == 1 and "waits on no question (it is completed)" in capsys.readouterr().err


def test_stop_of_a_task_whose_server_is_gone_says_so(tmp_path: Path) -> None:
    with pytest.raises(ControlError, match="is gone"):
        request_stop(tmp_path, "12345-abcd.fifo", "0123456789abcdef")
    with pytest.raises(ControlError, match="without a control channel"):
        request_stop(tmp_path, None, "0123456789abcdef")
    with pytest.raises(ControlError, match="without a control channel"):
        request_stop(tmp_path, "../../etc/passwd", "0123456789abcdef")
    (tmp_path / "control").mkdir()
    os.mkfifo(tmp_path / "control" / "1-dead.fifo", 0o600)  # left by a crashed server: nobody reads it
    with pytest.raises(ControlError, match="not listening"):
        request_stop(tmp_path, "1-dead.fifo", "0123456789abcdef")


class _Thread:
    def __init__(self, argv: list[str]) -> None:
        import io
        import threading

        self._out = io.StringIO()
        self._code = 0
        self._argv = argv
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        from mcp_subagents.cli.tasks import tasks_command

        self._code = tasks_command(
            self._argv[1], Path(self._argv[-1]), task_id=self._argv[2], as_json=False, out=self._out
        )

    def result(self) -> tuple[int, str]:
        self._thread.join(timeout=10)
        return self._code, self._out.getvalue()


def _start_thread(argv: list[str]) -> _Thread:
    return _Thread(argv)


def _run_main(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(argv)
    code = exited.value.code
    return (code if isinstance(code, int) else 0), out.getvalue()


@pytest.mark.anyio
@pytest.mark.parametrize(("model", "then"), [("claude-sonnet-4-6", "cost: $0.000045"), ("llama3", "no price")])
async def test_show_of_a_running_task_says_no_price_only_of_a_model_that_has_none(
    model: str, then: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before its first model response a task said "the model has no price", priced or not."""
    settings = make_settings(tmp_path, model=model)
    state = str(settings.state_dir)
    asked = [anyio.Event(), anyio.Event()]
    go_on = [anyio.Event(), anyio.Event()]
    replies = iter([tool_call("Glob", {"pattern": "*"}), text("done")])

    async def respond(_request: ModelRequest) -> ModelResponse:
        turn = next(index for index, event in enumerate(asked) if not event.is_set())
        asked[turn].set()
        await go_on[turn].wait()
        return next(replies)

    shown: list[str] = []
    async with running_app(settings, model=FunctionModel(respond)) as app:
        record = app.launch(TaskRequest(description="a job", prompt="p", subagent_type="general-purpose"))
        for turn in (0, 1):
            with anyio.fail_after(10):
                await asked[turn].wait()
            _, out = await anyio.to_thread.run_sync(_run_main, ["tasks", "show", record.id, "--state-dir", state])
            shown.append(out)
            go_on[turn].set()
        assert await app.tasks.wait(record, 10)
    assert "cost: none yet (no model response so far)" in shown[0] and "no price" not in shown[0]
    assert then in shown[1]
    if model == "llama3":
        assert f"cost: tokens only ({model} has no price)" in shown[1]
    else:
        assert "no price" not in shown[1]
    capsys.readouterr()


@pytest.mark.anyio
async def test_list_and_show_flag_a_looping_task_and_a_silent_one_from_the_files(tmp_path: Path) -> None:
    from mcp_subagents.cli.tasks import tasks_command
    from mcp_subagents.tasks.files import find_task, read_task

    stuck, release = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> ModelResponse:
        if "loop" in str(request.messages[0]) and len(request.messages) < 6:
            return tool_call("Glob", {"pattern": "*.md"})
        stuck.set()
        await release.wait()
        return text("done")

    def shown(action: str, task_id: str | None = None) -> str:
        import io

        out = io.StringIO()
        tasks_command(action, settings.state_dir, task_id=task_id, as_json=action == "json", out=out, stall_after=60)
        return out.getvalue()

    settings = make_settings(tmp_path)
    async with running_app(settings, model=FunctionModel(respond)) as app:
        looping = app.launch(TaskRequest(description="loops", prompt="loop", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await stuck.wait()
            stuck = anyio.Event()
        quiet = app.launch(TaskRequest(description="thinks", prompt="think", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await stuck.wait()
        listing = await anyio.to_thread.run_sync(shown, "list")
        details = await anyio.to_thread.run_sync(shown, "show", looping.id)
        snapshot = read_task(find_task(settings.state_dir, quiet.id))
        release.set()
    assert "loops  [looping: it called Glob with the same arguments 3 times in a row" in listing
    assert "looping: it called Glob with the same arguments 3 times in a row" in details
    assert snapshot is not None and snapshot.stall(60) is None  # it answered a moment ago
    silent = snapshot.stall(60, now=snapshot.active_at + 61)
    assert silent is not None and silent.kind == "silent" and silent.seconds == pytest.approx(61)
