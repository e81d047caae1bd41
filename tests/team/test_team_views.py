"""What a person sees of a team's tasks on any replica: the dashboard of one replica lists the tasks another runs,
follows them as they grow, and stops them there."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from tests.fakes.fake_llm import FakeLLM
from tests.processes import wait_until_gone
from tests.serve.test_dashboard import events
from tests.team.replicas import Signal, replica
from tests.team.test_replicas import BYPASS, launched, output, run_once_then_answer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


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
