"""What a person sees of a team's tasks on any replica: the dashboard of one replica lists the tasks another runs,
follows them as they grow, and stops them there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest

from tests.fakes.fake_llm import FakeLLM, Step, text, tool_use, turn
from tests.mcp.test_asking import Host
from tests.processes import wait_until_gone
from tests.serve.test_dashboard import events
from tests.support import text_of
from tests.team.replicas import Signal, replica
from tests.team.test_replicas import ASKING, BYPASS, asking_host, launched, output, run_once_then_answer, tool_results

pytestmark = pytest.mark.anyio


async def test_a_replica_s_dashboard_lists_and_stops_a_task_another_replica_runs(
    tmp_path: Path, database_url: str
) -> None:
    marker, pid_file, started = tmp_path / "ran", tmp_path / "pid", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"echo $$ > {pid_file}; {started.command()}; sleep 300")
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a,
            replica(tmp_path / "b", project, database_url, fake, MCP_SUBAGENTS_DASHBOARD="1", **BYPASS) as b,
        ):
            found = await b.log.wait_for(
                r"dashboard of the team's database .*\n\s*(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)"
            )
            base, token = found.group(1), found.group(2)
            async with (
                httpx.AsyncClient(base_url=base, headers={"X-Dashboard-Token": token}, timeout=10) as api,
                api.stream("GET", "/api/events") as listing,
            ):
                task_id = await launched(a.url)
                await started.wait()
                with anyio.fail_after(30):
                    async for name, data in events(listing):  # the list is sent again whenever it changes
                        rows = {row["task_id"]: row for row in data["tasks"]} if name == "tasks" else {}
                        if rows.get(task_id, {}).get("state") == "running":
                            break
                stop = await api.post(f"/api/tasks/{task_id}/stop", json={})
            await wait_until_gone(int(pid_file.read_text()))
            answer = await output(b.url, task_id)
    assert stop.status_code == 202, stop.text
    assert "stopped" in answer, answer


async def test_a_host_waiting_on_another_replica_sees_the_task_s_progress(tmp_path: Path, database_url: str) -> None:
    host = Host("allow")
    shown: list[str] = []
    answered_at: list[int] = []

    async def answering(context: Any, params: Any) -> Any:
        answered_at.append(len(shown))
        return await host(context, params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        shown.append(message or "")

    def two_calls(body: dict[str, Any]) -> Step:
        made = len(tool_results(body)) and sum(1 for message in body["messages"] if message["role"] == "assistant")
        if not made:  # a write: the person is asked first
            return turn(tool_use("Bash", {"command": "touch one.txt", "description": "first"}))
        if made == 1:
            return turn(tool_use("Bash", {"command": "echo two", "description": "second"}))
        return turn(text("both ran"))

    with FakeLLM() as fake:
        fake.default = two_calls
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **ASKING) as a,
            replica(tmp_path / "b", project, database_url, fake, **ASKING) as b,
        ):
            task_id = await launched(a.url)
            with anyio.fail_after(90):
                async with asking_host(b.url, answering) as client:
                    arguments = {"task_id": task_id, "timeout": 60_000}
                    result = await client.call_tool("TaskOutput", arguments, progress_callback=on_progress)
    assert len(host.questions) == 1 and "both ran" in text_of(result), text_of(result)
    # After the person's answer (so surely while the host waits on replica b): what replica a's run did next.
    assert answered_at, shown  # the host was asked
    after = shown[answered_at[0] :]
    assert "turn 2" in after and "turn 2: Bash" in after and "turn 3" in after, shown
