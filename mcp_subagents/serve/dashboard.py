"""The browser dashboard: every task of a state directory, live (server-sent events), a page per task with its
transcript, tokens and cost over time, stop and resume buttons, and the permission question a task waits on with
Allow once, Always allow and Deny.

It is the local operator's view: it shows the tasks of every principal, so it listens on 127.0.0.1 only and
everything but the static files needs the secret made at each start. The secret is in the URL printed at start
(the page moves it out of the address bar); without it, other local users and web pages get nothing.
Against other sites: the Host header must name this address (DNS rebinding), POSTs must carry the secret in a
header, a JSON body and, when a browser sends one, this page's Origin; no CORS headers are ever sent. An answer to a
permission question is such a POST: only the person at this machine, in this page, allows a call.

What the API sends is inert (`render.inert`): a bidi override or a zero-width space in a task's text arrives as a
visible escape, and the page escapes again whatever it shows.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import QuestionClosedError, SubagentsError
from ..models.pricing import PriceTable
from ..permissions.asking import CHOICES, Choice
from ..render.inert import inert_values, well_formed
from ..render.rows import DEFAULT_STALL_AFTER
from ..render.web import web_file
from ..runtime.answers import Receipt
from ..tasks.control import PLACES, QUESTION_ID, AnswerRequest, ControlError, request_answer, request_stop
from ..tasks.files import TaskLookupError, TaskSnapshot, find_task, read_task
from ..tasks.tree import TreeReader
from .asgi import serve_until_cancelled
from .dashboard_data import TaskRows, TranscriptFollower, state_signature, task_page_row

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
WATCH_INTERVAL = 0.5
"""Seconds between looks at the state directory for changes."""
KEEPALIVE = 15.0
MAX_PROMPT = 100_000
TOKEN_HEADER = "x-dashboard-token"
STATIC = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}

Resumer = Callable[[str, str], Awaitable[str]]
"""Resume task `id` with `prompt`; returns the new task's id. Raises `SubagentsError` with the reason it cannot."""
Stopper = Callable[[str], bool]
"""Stop a task this process runs; False when it runs elsewhere (then the control channel is used)."""
Answerer = Callable[[str, str, Choice], Awaitable[Receipt | None]]
"""Answer (task id, question id, choice) for a task this process runs, and say what became of it; None when the task
runs elsewhere (then the control channel is used). Raises `QuestionClosedError` when the question is not open."""
VIA = PLACES["dashboard"]
DONE = {"allow": "Allowed once", "always": "Always allowed", "deny": "Denied"}


@dataclass(frozen=True, slots=True)
class DashboardAccess:
    port: int
    token: str

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.token}"

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"{HOST}:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)


def open_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(64)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class Dashboard:
    def __init__(
        self,
        state_dir: Path,
        *,
        port: int,
        person: str,
        prices: PriceTable | None = None,
        stop_here: Stopper | None = None,
        answer_here: Answerer | None = None,
        resume: Resumer | None = None,
        stall_after: float = DEFAULT_STALL_AFTER,
    ) -> None:
        """`person`: who the answers given here are recorded as given by (the user who runs the dashboard);
        `stall_after`: `--stall-after`, when a running task is shown as stalled."""
        self.state_dir = state_dir
        self.access = DashboardAccess(port=port, token=secrets.token_urlsafe(32))
        self._person = person
        self._prices = prices or PriceTable()
        self._stop_here = stop_here
        self._answer_here = answer_here
        self._resume = resume
        self._stall_after = stall_after

    def app(self) -> ASGIApp:
        routes = [
            Route("/", self._index),
            Route("/static/{name}", self._static),
            Route("/api/tasks", self._tasks),
            Route("/api/events", self._events),
            Route("/api/tasks/{task_id}", self._task),
            Route("/api/tasks/{task_id}/events", self._task_events),
            Route("/api/tasks/{task_id}/stop", self._stop, methods=["POST"]),
            Route("/api/tasks/{task_id}/resume", self._resume_task, methods=["POST"]),
            Route("/api/tasks/{task_id}/answer", self._answer, methods=["POST"]),
        ]
        return _Guard(Starlette(routes=routes), self.access)

    async def serve(self, sock: socket.socket) -> None:
        """Serve on `sock` (bound by `open_socket`) until cancelled."""
        with sock:
            await serve_until_cancelled(self.app(), sock, grace_seconds=1, lifespan="off", force_exit=True)

    # ---- pages -----------------------------------------------------------------------------------------------------

    async def _index(self, request: Request) -> Response:
        if not self._authorized(request):
            return HTMLResponse(
                "<!doctype html><title>mcp-subagents</title><p>Open the dashboard with the address "
                "<code>mcp-subagents dashboard</code> printed when it started (it carries a secret).</p>",
                status_code=403,
            )
        page = _web_file("dashboard.html").replace("{{token}}", self.access.token)
        return HTMLResponse(page)

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404)
        return Response(_web_file(name), media_type=STATIC[name])

    # ---- the API ---------------------------------------------------------------------------------------------------

    async def _tasks(self, request: Request) -> Response:
        if not self._authorized(request):
            return _forbidden()
        listing = TaskRows(self.state_dir, self._prices, stall_after=self._stall_after)
        rows = await anyio.to_thread.run_sync(listing.rows)
        return _shown({"tasks": rows})

    def _task_path(self, request: Request) -> Path | Response:
        """The transcript of the task a read request names, or the response that refuses it."""
        if not self._authorized(request):
            return _forbidden()
        return self._named_task(request)

    def _named_task(self, request: Request) -> Path | Response:
        try:
            return find_task(self.state_dir, request.path_params["task_id"])
        except TaskLookupError as exc:
            return _shown({"error": exc.message}, status_code=404)

    async def _task(self, request: Request) -> Response:
        path = self._task_path(request)
        if isinstance(path, Response):
            return path
        snapshot = await anyio.to_thread.run_sync(read_task, path, self._prices)
        if snapshot is None:
            return _shown({"error": "no such task"}, status_code=404)
        items = TranscriptFollower(path).new_items(snapshot)
        tree = TreeReader(self.state_dir, self._prices)
        row = await anyio.to_thread.run_sync(partial(task_page_row, snapshot, tree, stall_after=self._stall_after))
        return _shown({"task": row, "items": items})

    async def _events(self, request: Request) -> Response:
        if not self._authorized(request):
            return _forbidden()
        return _event_stream(self._task_list_events())

    async def _task_list_events(self) -> AsyncIterator[str]:
        seen: tuple[tuple[str, int, int], ...] | None = None
        listing = TaskRows(self.state_dir, self._prices, stall_after=self._stall_after)
        quiet = 0.0
        while True:
            signature = await anyio.to_thread.run_sync(state_signature, self.state_dir)
            if signature != seen:
                seen = signature
                rows = await anyio.to_thread.run_sync(listing.rows)
                yield _event("tasks", {"tasks": rows})
                quiet = 0.0
            elif quiet >= KEEPALIVE:
                yield ": keep-alive\n\n"
                quiet = 0.0
            await anyio.sleep(WATCH_INTERVAL)
            quiet += WATCH_INTERVAL

    async def _task_events(self, request: Request) -> Response:
        path = self._task_path(request)
        if isinstance(path, Response):
            return path
        return _event_stream(self._follow(path))

    async def _follow(self, path: Path) -> AsyncIterator[str]:
        follower, tree = TranscriptFollower(path), TreeReader(self.state_dir, self._prices)
        last_row: dict[str, Any] | None = None
        quiet = 0.0
        while True:
            snapshot = await anyio.to_thread.run_sync(read_task, path, self._prices)
            items = follower.new_items(snapshot)
            row = None
            if snapshot is not None:
                page_row = partial(task_page_row, snapshot, tree, stall_after=self._stall_after)
                row = await anyio.to_thread.run_sync(page_row)
            if items:
                yield _event("items", {"items": items})
            if row != last_row:
                yield _event("task", {"task": row})
            if items or row != last_row:
                quiet = 0.0
            elif quiet >= KEEPALIVE:
                yield ": keep-alive\n\n"
                quiet = 0.0
            last_row = row
            await anyio.sleep(WATCH_INTERVAL)
            quiet += WATCH_INTERVAL

    async def _stop(self, request: Request) -> Response:
        problem = await self._check_action(request)
        if problem is not None:
            return problem
        path = self._named_task(request)
        if isinstance(path, Response):
            return path
        snapshot = read_task(path)
        if snapshot is None or snapshot.finished:
            state = snapshot.state if snapshot else "unknown"
            return _shown({"error": f"The task already ended: {state}."}, status_code=409)
        task_id = snapshot.task_id
        if self._stop_here is not None and self._stop_here(task_id):
            return _shown({"stopping": task_id}, status_code=202)
        try:
            request_stop(self.state_dir, snapshot.header.control, task_id)
        except ControlError as exc:
            return _shown({"error": exc.message}, status_code=409)
        return _shown({"stopping": task_id}, status_code=202)

    async def _resume_task(self, request: Request) -> Response:
        problem = await self._check_action(request)
        if problem is not None:
            return problem
        try:
            body = await request.json()
        except ValueError:
            return _shown({"error": 'The body must be JSON: {"prompt": "..."}'}, status_code=400)
        prompt: Any = cast("dict[str, Any]", body).get("prompt") if isinstance(body, dict) else None
        if isinstance(prompt, str):
            prompt = well_formed(prompt)  # JSON may carry lone surrogates, which no model API accepts
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT:
            return _shown({"error": "prompt must be a non-empty text"}, status_code=400)
        if self._resume is None:
            return _shown({"error": "This dashboard cannot run tasks."}, status_code=409)
        try:
            path = find_task(self.state_dir, request.path_params["task_id"])
            new_id = await self._resume(path.stem, prompt)
        except TaskLookupError as exc:
            return _shown({"error": exc.message}, status_code=404)
        except SubagentsError as exc:
            return _shown({"error": exc.message}, status_code=409)
        return _shown({"task_id": new_id}, status_code=202)

    async def _answer(self, request: Request) -> Response:
        problem = await self._check_action(request)
        if problem is not None:
            return problem
        wanted = await _answer_body(request)
        if isinstance(wanted, Response):
            return wanted
        question_id, choice = wanted
        path = self._named_task(request)
        if isinstance(path, Response):
            return path
        snapshot = read_task(path)
        if snapshot is None:
            return _shown({"error": "no such task"}, status_code=404)
        if self._answer_here is not None:
            try:
                receipt = await self._answer_here(snapshot.task_id, question_id, choice)
            except QuestionClosedError as exc:
                return _shown({"error": exc.message}, status_code=409)
            if receipt is not None:
                return _shown(_answered(snapshot.task_id, question_id, choice, receipt))
        return self._answer_elsewhere(snapshot, question_id, choice)

    def _answer_elsewhere(self, snapshot: TaskSnapshot, question_id: str, choice: Choice) -> Response:
        """Send the answer to the server process that runs the task; it settles the question there."""
        waiting, task_id = snapshot.waiting, snapshot.task_id
        if snapshot.finished or waiting is None or waiting.id != question_id:
            return _shown({"error": _closed(snapshot)}, status_code=409)
        answer = AnswerRequest(task_id, question_id, choice, "dashboard", self._person)
        try:
            request_answer(self.state_dir, snapshot.header.control, answer)
        except ControlError as exc:
            return _shown({"error": exc.message}, status_code=409)
        text = f"{DONE[choice]}: sent to the server that runs task {task_id}, which settles the question."
        return _shown(
            {"task_id": task_id, "question_id": question_id, "choice": choice, "text": text, "note": None},
            status_code=202,
        )

    # ---- checks ----------------------------------------------------------------------------------------------------

    def _authorized(self, request: Request) -> bool:
        given = request.headers.get(TOKEN_HEADER) or request.query_params.get("token") or ""
        return hmac.compare_digest(given.encode(), self.access.token.encode())

    async def _check_action(self, request: Request) -> Response | None:
        """A stop, resume or answer: the secret in the header (never in the URL), a JSON body, and our own Origin."""
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.access.token.encode()):
            return _forbidden()
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.access.origins:
            return _shown({"error": "cross-site request refused"}, status_code=403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _shown({"error": "send application/json"}, status_code=415)
        return None


class _Guard:
    """Answers only requests addressed to this dashboard (Host), with security headers on every response."""

    def __init__(self, app: ASGIApp, access: DashboardAccess) -> None:
        self._app = app
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if headers.get("host", "").lower() not in self._access.hosts:
            response = Response("wrong Host: this dashboard answers only on its own address", status_code=421)
            await response(scope, receive, send)
            return

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self._app(scope, receive, secured)


async def _answer_body(request: Request) -> tuple[str, Choice] | Response:
    """The question and the choice an answer names, or the response that says which field is wrong."""
    try:
        body: Any = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return _shown({"error": 'The body must be JSON: {"question_id": "...", "choice": "allow"}'}, status_code=400)
    fields = cast("dict[str, Any]", body)
    question_id, choice = fields.get("question_id"), fields.get("choice")
    if not isinstance(question_id, str) or not QUESTION_ID.fullmatch(question_id):
        return _shown({"error": "question_id must be the id of the question the task waits on"}, status_code=400)
    if choice not in CHOICES:
        return _shown({"error": "choice must be allow, always or deny"}, status_code=400)
    return question_id, choice


def _answered(task_id: str, question_id: str, choice: Choice, receipt: Receipt) -> dict[str, Any]:
    answer = receipt.answer
    return {
        "task_id": task_id,
        "question_id": question_id,
        "choice": choice,
        "text": f"{DONE[choice]} by {answer.by} via {answer.via}.",
        "note": receipt.note,
    }


def _closed(snapshot: TaskSnapshot) -> str:
    return (
        f"That question of task {snapshot.task_id} is not open any more: it was answered already, it waited longer "
        f"than --ask-timeout, or the task ended (it is {snapshot.state})."
    )


def _forbidden() -> Response:
    return _shown({"error": "missing or wrong dashboard secret"}, status_code=403)


def _shown(data: Any, status_code: int = 200) -> JSONResponse:
    """Every JSON answer of the dashboard: inert, like everything it shows."""
    return JSONResponse(inert_values(data), status_code=status_code)


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(inert_values(data), ensure_ascii=False)}\n\n"


def _event_stream(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


def _web_file(name: str) -> str:
    return web_file(name)
