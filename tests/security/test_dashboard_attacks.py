"""Attacks on the dashboard, which shows every principal's transcripts and can stop and resume tasks: other
sites (cross-site requests, DNS rebinding), other local users (no secret), and crafted ids and bodies. Each would
stop a task or read a transcript on a dashboard without its checks."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2 as httpx
import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.serve.dashboard import HOST, open_socket
from mcp_subagents.tasks.record import TaskRecord

from ..dashboard_support import base_url, client, served_dashboard
from ..support import make_settings, running_app

pytestmark = pytest.mark.anyio


async def running_task(app: Subagents, waiting: anyio.Event) -> TaskRecord:
    record = app.launch(TaskRequest(description="victim", prompt="p", subagent_type="general-purpose"))
    with anyio.fail_after(10):
        await waiting.wait()
    return record


def blocking_model(waiting: anyio.Event) -> FunctionModel:
    async def respond(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("Glob", {"pattern": "*"})
        waiting.set()
        await anyio.sleep_forever()
        return text("never")

    return FunctionModel(respond)


async def test_cross_site_and_tokenless_stops_are_refused_and_the_task_keeps_running(tmp_path: Path) -> None:
    waiting = anyio.Event()
    async with (
        running_app(make_settings(tmp_path), model=blocking_model(waiting)) as app,
        served_dashboard(app) as dashboard,
    ):
        record = await running_task(app, waiting)
        stop = f"/api/tasks/{record.id}/stop"
        token = dashboard.access.token
        async with client(dashboard, with_token=False) as anonymous:
            attacks = [
                # a form or fetch from another site: no secret
                await anonymous.post(stop, json={}),
                # the secret in the URL is not enough for an action (URLs leak into logs and history)
                await anonymous.post(stop, params={"token": token}, json={}),
                # a page of another site that somehow holds the secret: its Origin gives it away
                await anonymous.post(stop, json={}, headers={"X-Dashboard-Token": token, "Origin": "http://evil.test"}),
                # another port on this machine is another origin too
                await anonymous.post(
                    stop, json={}, headers={"X-Dashboard-Token": token, "Origin": "http://127.0.0.1:1"}
                ),
                # a "simple" cross-site request (no preflight) cannot be JSON
                await anonymous.post(
                    stop, content="{}", headers={"X-Dashboard-Token": token, "Content-Type": "text/plain"}
                ),
                # GET never acts
                await anonymous.get(stop, params={"token": token}),
            ]
        assert [response.status_code for response in attacks] == [403, 403, 403, 403, 415, 405]
        assert record.state == "running"
        for response in attacks:
            assert "access-control-allow-origin" not in response.headers
        async with client(dashboard) as api:
            done = await api.post(stop, json={}, headers={"Origin": f"http://127.0.0.1:{dashboard.access.port}"})
        assert done.status_code == 202
        with anyio.fail_after(10):
            await record.done.wait()
        assert record.state == "stopped"


async def test_dns_rebinding_and_other_hosts_get_nothing(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text("x"))) as app:
        async with served_dashboard(app) as dashboard, client(dashboard) as api:
            token = dashboard.access.token
            for path in ("/", f"/?token={token}", "/api/tasks", "/static/dashboard.js", "/api/events"):
                response = await api.get(path, headers={"Host": "attacker.example"})
                assert response.status_code == 421, path
                assert token not in response.text
            page = await api.get(f"/?token={token}", headers={"Host": f"localhost:{dashboard.access.port}"})
            assert page.status_code == 200


async def test_every_response_forbids_framing_inline_script_and_caching(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text("x"))) as app:
        async with served_dashboard(app) as dashboard, client(dashboard) as api:
            for path in (f"/?token={dashboard.access.token}", "/api/tasks", "/static/dashboard.css"):
                headers = (await api.get(path)).headers
                assert "script-src 'self'" in headers["content-security-policy"]
                assert "frame-ancestors 'none'" in headers["content-security-policy"]
                assert headers["x-content-type-options"] == "nosniff"
                assert headers["referrer-policy"] == "no-referrer"  # the secret in the page URL stays here
                assert headers["cache-control"] == "no-store"
            page = (await api.get(f"/?token={dashboard.access.token}")).text
            assert "<script>" not in page and 'src="/static/dashboard.js"' in page


async def test_crafted_task_ids_and_bodies_reach_no_file_and_crash_nothing(tmp_path: Path) -> None:
    (tmp_path / "secret.jsonl").write_text('{"type": "header", "task_id": "x", "agent": "a"}\n', encoding="utf-8")
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text("x"))) as app:
        async with served_dashboard(app) as dashboard, client(dashboard) as api:
            for task_id in ("..%2F..%2Fsecret", "%2e%2e", "a" * 65, "x;rm -rf", "%00"):
                for method, path in (("GET", f"/api/tasks/{task_id}"), ("POST", f"/api/tasks/{task_id}/stop")):
                    response = await api.request(method, path, json={})
                    assert response.status_code in (403, 404), (method, path, response.status_code)
                    assert "secret" not in response.text or "dashboard secret" in response.text
            for body in (b"not json", b"[1, 2]", b'{"prompt": 12}', b'{"prompt": "' + b"x" * 100_001 + b'"}'):
                response = await api.post(
                    "/api/tasks/0123456789abcdef/resume", content=body, headers={"Content-Type": "application/json"}
                )
                assert response.status_code == 400
            assert (await api.get("/api/tasks")).status_code == 200  # still serving


def test_the_dashboard_listens_on_loopback_only() -> None:
    sock = open_socket(0)
    try:
        assert sock.getsockname()[0] == HOST == "127.0.0.1"
    finally:
        sock.close()


async def test_a_stale_socket_path_is_not_a_way_in(tmp_path: Path) -> None:
    """The secret is per start: the address of an earlier dashboard does not open a new one."""
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text("x"))) as app:
        async with served_dashboard(app) as first:
            old_token = first.access.token
        async with served_dashboard(app) as second, httpx.AsyncClient(base_url=base_url(second)) as api:
            assert second.access.token != old_token
            assert (await api.get("/api/tasks", headers={"X-Dashboard-Token": old_token})).status_code == 403
