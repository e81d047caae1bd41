"""The dashboard in headless Chromium: a task appears in the list, its page shows the transcript as it grows
(messages, tool calls, results, a denial) with tokens and cost over time, the page's Stop button stops it, Resume
continues it, a task waiting on a permission question is found with the list's "waiting" filter and answered with
the page's buttons, and model-written text stays text (no script runs)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.messages import TextPart, ToolCall, Usage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel
from mcp_subagents.render.questions import question_headline, waiting_text
from mcp_subagents.runtime.request import TaskRequest
from tests.browser_support import chromium_page, screenshot_path
from tests.dashboard_support import PERSON, asking_task, served_dashboard, writing_model
from tests.security.inert_support import HOSTILE, HOSTILE_TOOL, assert_inert
from tests.support import make_settings, running_app

pytestmark = pytest.mark.anyio

XSS = '<img src=x onerror="window.pwned = 1">'


def reply(text: str, *calls: tuple[str, Mapping[str, object]], tokens: int = 1) -> ModelResponse:
    usage = Usage(input_tokens=1800 * tokens, output_tokens=420 * tokens, cache_read_tokens=6000 * tokens)
    calls_made = (ToolCall(id=f"{name}-{tokens}", name=name, arguments=dict(args)) for name, args in calls)
    parts = (TextPart(text=text), *calls_made)
    return ModelResponse(parts=parts, stop_reason="tool_use" if calls else "end_turn", usage=usage)


class Script:
    def __init__(self) -> None:
        self.second_turn = anyio.Event()
        self.waiting = anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        prompt, last = str(request.messages[0]), str(request.messages[-1])
        if "go on" in last:
            return reply("Resumed: the build script is fine; nothing else to change.", tokens=2)
        if "quick" in prompt:
            return reply(f"Summary of {XSS}: three modules, no tests.", tokens=3)
        turn = sum(1 for message in request.messages if message.role == "assistant") + 1
        if turn == 1:
            glob, bash = ("Glob", {"pattern": "**/Makefile"}), ("Bash", {"command": "make clean"})
            return reply("Looking for the build files.", glob, bash)
        if turn == 2:
            await self.second_turn.wait()
            return reply("Checking the configuration next.", ("Grep", {"pattern": "CFLAGS"}), tokens=2)
        self.waiting.set()
        await anyio.sleep_forever()
        raise AssertionError("stopped before answering")


async def test_a_task_appears_grows_and_is_stopped_and_resumed_from_the_page(tmp_path: Path) -> None:
    script = Script()
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with running_app(settings, model=FunctionModel(script)) as app, served_dashboard(app) as dashboard:
        plan = app.launch(TaskRequest(description="plan the parser rewrite", prompt="quick", subagent_type="Plan"))
        with anyio.fail_after(10):
            await plan.done.wait()
        async with chromium_page(width=1200, height=760) as page:
            await page.goto(dashboard.access.url)
            assert dashboard.access.token not in page.url  # moved out of the address bar
            await page.locator(f'tr[data-task-id="{plan.id}"]').wait_for(timeout=10_000)

            slow = app.launch(
                TaskRequest(
                    description="tidy the build",
                    prompt="Tidy the build and check the compiler flags.",
                    subagent_type="general-purpose",
                )
            )
            row = page.locator(f'tr[data-task-id="{slow.id}"]')
            await row.wait_for(timeout=10_000)  # appeared, live
            await row.locator(".state.running").wait_for(timeout=10_000)
            await row.locator("td.tool", has_text="").first.wait_for(timeout=10_000)
            if (path := screenshot_path("dashboard.png")) is not None:
                await page.set_viewport_size({"width": 1200, "height": 200})
                await page.screenshot(path=str(path))
                await page.set_viewport_size({"width": 1200, "height": 760})

            await row.click()
            await page.locator(".item.assistant", has_text="Looking for the build files.").wait_for(timeout=10_000)
            await page.locator(".item.denial", has_text="denied: Bash").wait_for(timeout=10_000)
            await page.locator(".item.result").first.wait_for(timeout=10_000)
            assert await page.locator(".item.assistant", has_text="Checking the configuration").count() == 0
            script.second_turn.set()  # the task goes on while the page is open
            await page.locator(".item.assistant", has_text="Checking the configuration next.").wait_for(timeout=10_000)
            with anyio.fail_after(10):
                await script.waiting.wait()
            await page.locator(".chart .legend", has_text="2 model response(s)").wait_for(timeout=10_000)
            await page.locator(".fact", has_text="running now").wait_for(timeout=10_000)
            await page.locator(".fact", has_text="claude-sonnet-4-6 (effort medium)").wait_for(timeout=10_000)
            if (path := screenshot_path("dashboard-task.png")) is not None:
                await page.screenshot(path=str(path))

            await page.get_by_role("button", name="Stop").click()
            await page.locator("h1 .state.stopped").wait_for(timeout=10_000)
            await page.locator(".item.end.stopped").wait_for(timeout=10_000)
            assert slow.state == "stopped"

            await page.get_by_label("resume prompt").fill("go on with the rest")
            await page.get_by_role("button", name="Resume").click()
            await page.locator("h1 .state.completed").wait_for(timeout=10_000)
            await page.locator(".item.end.completed", has_text="the build script is fine").wait_for(timeout=10_000)
            assert slow.id not in page.url

            quick = app.launch(TaskRequest(description=f"summarise {XSS}", prompt="quick", subagent_type="Explore"))
            await page.goto(dashboard.access.url)
            quick_row = page.locator(f'tr[data-task-id="{quick.id}"]')
            await quick_row.click()
            await page.locator(".item.assistant", has_text="Summary of").wait_for(timeout=10_000)
            assert XSS in await page.locator(".item.assistant pre").first.inner_text()
            assert await page.evaluate("window.pwned") is None
            assert await page.locator("img").count() == 0


@pytest.mark.parametrize("button", ["Allow once", "Always allow", "Deny"])
async def test_the_waiting_filter_finds_the_question_and_its_buttons_answer_it(tmp_path: Path, button: str) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    local = settings.cwd / ".claude" / "settings.local.json"
    async with (
        running_app(settings, model=writing_model(settings.cwd)) as app,
        served_dashboard(app) as dashboard,
        chromium_page(width=1200, height=900) as page,
    ):
        earlier, first = await asking_task(app, "an earlier write")
        await app.answers.answer(earlier, first.id, "deny", by="someone", via="a test")
        with anyio.fail_after(10):
            await earlier.done.wait()
        record, question = await asking_task(app)
        await page.goto(dashboard.access.url)
        row = page.locator(f'tr[data-task-id="{record.id}"]')
        await row.locator(".waiting-for-you").wait_for(timeout=10_000)
        assert await row.locator(".waiting-for-you").inner_text() == waiting_text(question.question)
        await page.locator('tr[data-task-id="' + earlier.id + '"]').wait_for(timeout=10_000)
        await page.get_by_role("button", name=re.compile(r"^waiting \(1\)$")).click()
        await page.locator(f'tr[data-task-id="{earlier.id}"]').wait_for(state="detached", timeout=10_000)
        assert await page.locator("tr.task").count() == 1

        await row.click()
        box = page.locator("section.question")
        await box.locator(".headline").wait_for(timeout=10_000)
        assert await box.locator(".headline").inner_text() == question_headline(question.question)
        details = await box.locator(".details").inner_text()
        assert f"Task {record.id}." in details and "Why it asks: Write on" in details
        assert await box.locator(".always-text").inner_text() == f"Always allow adds Edit(./notes.txt) to {local}."
        if (path := screenshot_path("dashboard-question.png")) is not None and button == "Allow once":
            await page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1200, "height": 620})
        await box.get_by_role("button", name=button).click()
        await page.locator("h1 .state.completed").wait_for(timeout=10_000)
        answer = page.locator(".item.answer")
        await answer.wait_for(timeout=10_000)
        end = await page.locator(".item.end.completed").inner_text()
        assert await box.is_hidden()
        shown_answer = await answer.inner_text()
    assert record.state == "completed"
    if button == "Deny":
        assert f"denied by {PERSON} via the dashboard" in shown_answer
        assert "Permission denied: The person denied this call (the dashboard)." in end
        assert not (settings.cwd / "notes.txt").exists()
    else:
        assert (settings.cwd / "notes.txt").read_text() == "written\n"
        assert f"The Write call gave: File created successfully at: {settings.cwd / 'notes.txt'}" in end
    if button == "Always allow":
        assert f"always allowed by {PERSON} via the dashboard" in shown_answer
        assert json.loads(local.read_text())["permissions"]["allow"] == ["Edit(./notes.txt)"]
    else:
        assert not local.exists()
    if button == "Allow once":
        assert f"allowed by {PERSON} via the dashboard" in shown_answer


def _raw_row(task_id: str) -> dict[str, object]:
    """A task row as an API that did not make text inert would send it: the page must not draw it raw either."""
    return {
        "task_id": task_id,
        "state": "running",
        "agent": "helper\u202e",
        "description": f"raw {HOSTILE}",
        "owner": "local",
        "created": 1_700_000_000,
        "turns": 1,
        "tokens": 10,
        "cost_usd": None,
        "elapsed_s": 1.0,
        "current_tools": [HOSTILE_TOOL],
    }


async def test_a_hostile_tasks_text_is_shown_inert_in_the_page(tmp_path: Path) -> None:
    # Before, the page drew the model's bidi overrides, zero-width characters and escape sequences as they were:
    # "file\u202etxt.exe" read as "fileexe.txt", and a tool the model named with hidden characters looked harmless.
    async def respond(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return reply(HOSTILE, (HOSTILE_TOOL, {"file_path": "notes\u202e.md"}))
        return reply(f"Answer: {HOSTILE}", tokens=2)

    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with running_app(settings, model=FunctionModel(respond)) as app, served_dashboard(app) as dashboard:
        prompt = f"go {HOSTILE}"  # the prompt's first line has a column of its own
        record = app.launch(TaskRequest(description=f"look {HOSTILE}", prompt=prompt, subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await record.done.wait()
        async with chromium_page(width=1200, height=900) as page:
            await page.goto(dashboard.access.url)
            row = page.locator(f'tr[data-task-id="{record.id}"]')
            await row.wait_for(timeout=10_000)
            listed = await row.inner_text()
            await row.click()
            await page.locator(".item.end.completed").wait_for(timeout=10_000)
            shown = await page.locator("#view").inner_text()
            raw_id = "f" * 32
            await page.route(
                "**/api/events*",
                lambda route: route.fulfill(
                    status=200,
                    content_type="text/event-stream",
                    body=f"event: tasks\ndata: {json.dumps({'tasks': [_raw_row(raw_id)]})}\n\n",
                ),
            )
            await page.goto(dashboard.access.url)
            raw_row = page.locator(f'tr[data-task-id="{raw_id}"]')
            await raw_row.wait_for(timeout=10_000)
            raw_listed = await raw_row.inner_text()
    assert "look Done.\\x1b]52;c;" in listed and "go Done.\\x1b]52;c;" in listed
    assert_inert(listed)
    assert "Read\\x1b]52;c;aGk=\\x07\\u202e" in shown and "notes\\\\u202e.md" in shown  # the call, as JSON
    assert_inert(shown)
    assert "helper\\u202e" in raw_listed and "Read\\x1b]52;c;aGk=\\x07\\u202e" in raw_listed
    assert_inert(raw_listed)


async def test_the_list_shows_id_model_and_prompt_and_filters_by_waiting_running_and_finished(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, model="claude-sonnet-4-6", ask_timeout=60)
    assert settings.cwd is not None
    writes, release = writing_model(settings.cwd), anyio.Event()

    async def respond(request: ModelRequest) -> ModelResponse:
        prompt = str(request.messages[0])
        if "quick" in prompt:
            return reply("Three modules.")
        if "slow" in prompt:
            await release.wait()
            return reply("Followed.")
        return await writes.request(request)

    async with running_app(settings, model=FunctionModel(respond)) as app, served_dashboard(app) as dashboard:
        done = app.launch(
            TaskRequest(description="look", prompt=f"quick look {XSS}\nin detail", subagent_type="Explore")
        )
        with anyio.fail_after(10):
            await done.done.wait()
        slow = app.launch(TaskRequest(description="follow", prompt="slow: follow the logs", subagent_type="Explore"))
        asking, _ = await asking_task(app)
        async with chromium_page(width=1400, height=600) as page:
            await page.goto(dashboard.access.url)
            rows = {record.id: page.locator(f'tr[data-task-id="{record.id}"]') for record in (done, slow, asking)}
            await rows[slow.id].locator(".state.running").wait_for(timeout=10_000)
            await rows[asking.id].locator(".state.waiting").wait_for(timeout=10_000)
            headers = await page.locator("thead th").all_inner_texts()
            cells = rows[done.id].locator("td")
            first = {name: await cells.nth(headers.index(name)).inner_text() for name in ("id", "model", "prompt")}
            assert first == {"id": done.id[:8], "model": "claude-sonnet-4-6", "prompt": f"quick look {XSS}"}
            assert await page.locator("img").count() == 0  # the prompt is text
            assert await rows[asking.id].locator("td.prompt").inner_text() == "Write the notes."
            for name, kept in (("waiting", asking), ("running", slow), ("finished", done), ("all", None)):
                await page.get_by_role("button", name=re.compile(rf"^{name} \(")).click()
                for record, row in ((r, rows[r.id]) for r in (done, slow, asking)):
                    await row.wait_for(state="attached" if kept in (None, record) else "detached", timeout=10_000)
            assert await page.get_by_role("button").all_inner_texts() == [
                "all (3)",
                "waiting (1)",
                "running (1)",
                "finished (1)",
            ]
            release.set()
