"""Answers a host gets before the MCP SDK has loaded: a 2026-era host's `server/discover`, `resources/list` and
`tools/list`, from what this server answered the same requests with last time.

Loading the SDK and the runtime takes a second or more of CPU, and a host does not wait for ever: Claude Code sends
its first model request without a server that is still connecting, so on a busy machine its model never saw `Task`.
These three requests of the 2026 era carry everything they depend on (the client's capabilities ride in each
request's `_meta`), so the answer to the same request (the same params, byte for byte once canonical) is the same
while the server's settings, catalog and version are. This module answers them from a small cache in the state
directory while a thread imports the rest, and hands every other message, in order, to the SDK once it is loaded.
What it answered is asked again of the real server right after (`early_check`): a changed tool list is announced
with `tools/list_changed` and the cache is rewritten. A 2025-era host (`initialize`) gets nothing early.

Only the standard library is used here: it runs before anything else is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..config.json_file import replace_json
from ..core.state import DIRECTORY_MODE, EARLY_ANSWERS_FILE, default_state_dir
from ..core.version import __version__

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
EARLY_METHODS = frozenset({"server/discover", "resources/list", "tools/list", LISTEN})
"""What is answered early. A `subscriptions/listen` is acknowledged early (Claude Code waits for that before it
lists anything) and still handed to the SDK, which keeps the stream; its own acknowledgement is then held back."""
KEPT_CONFIGURATIONS = 16
"""How many server configurations (command line, environment, folder) the cache keeps answers for."""
_ENVIRONMENT_KEYS = ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR")
_POLL_S = 0.05


def params_digest(params: object) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class AnswerCache:
    """The answers kept for one server configuration (`key`), in the state directory's cache file."""

    path: Path
    key: str

    def load(self) -> dict[str, Any]:
        """method -> {"params": digest, "result": the result}; empty when there is none or the file is unusable."""
        entries = _read(self.path).get(self.key)
        return cast("dict[str, Any]", entries) if isinstance(entries, dict) else {}

    def store(self, method: str, digest: str, result: object) -> None:
        """Keep `result` as the answer to `method` with these params; the configuration becomes the newest."""
        data = _read(self.path)
        entry = data.pop(self.key, None)
        answers = cast("dict[str, Any]", entry) if isinstance(entry, dict) else {}
        answers[method] = {"params": digest, "result": result}
        data[self.key] = answers
        while len(data) > KEPT_CONFIGURATIONS:
            data.pop(next(iter(data)))
        with contextlib.suppress(OSError):  # the answers are only for speed: a start without them is slower
            replace_json(self.path, data, folder_mode=DIRECTORY_MODE)


def _read(path: Path) -> dict[str, Any]:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return {}  # only a private file of our own is believed
        with os.fdopen(descriptor, "rb") as file:
            descriptor = -1
            data: object = json.loads(file.read())
    except (OSError, ValueError):
        return {}
    finally:
        if descriptor >= 0:
            os.close(descriptor)
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


def answer_cache(argv: Sequence[str], environ: Mapping[str, str], cwd: str) -> AnswerCache:
    """Where this configuration's answers are kept: the state directory, under a digest of what shapes them."""
    shaping = [
        __version__,
        list(argv),
        cwd,
        sorted((k, v) for k, v in environ.items() if k.startswith("MCP_SUBAGENTS_") or k in _ENVIRONMENT_KEYS),
    ]
    return AnswerCache(_state_dir(argv, environ) / EARLY_ANSWERS_FILE, params_digest(shaping))


def _state_dir(argv: Sequence[str], environ: Mapping[str, str]) -> Path:
    for index, word in enumerate(argv):
        if word == "--state-dir" and index + 1 < len(argv):
            return Path(argv[index + 1]).expanduser()
        if word.startswith("--state-dir="):
            return Path(word.removeprefix("--state-dir=")).expanduser()
    if named := environ.get("MCP_SUBAGENTS_STATE_DIR"):
        return Path(named).expanduser()
    return default_state_dir(environ)


@dataclass(frozen=True, slots=True)
class Served:
    """A request answered early: its method, the digest of its params, and the line as it came."""

    method: str
    digest: str
    line: bytes


@dataclass(slots=True)
class EarlyStart:
    """What happened before the SDK took over: the requests answered, and the bytes it still has to read."""

    cache: AnswerCache
    served: list[Served] = field(default_factory=lambda: [])
    leftover: bytes = b""


def serve_early(cache: AnswerCache, load: Callable[[], object]) -> EarlyStart:
    """Run `load` (the imports) in a thread; meanwhile answer what the cache can from stdin. Returns once `load`
    has returned; re-raises what it raised."""
    start = EarlyStart(cache)
    answers = cache.load()
    failure: list[BaseException] = []

    def loading() -> None:
        try:
            load()
        except BaseException as exc:  # handed to the main thread, which raises it
            failure.append(exc)

    thread = threading.Thread(target=loading, name="mcp-subagents-load", daemon=True)
    thread.start()
    if answers:
        _answer_until(thread, answers, start)
    thread.join()
    if failure:
        raise failure[0]
    return start


def _answer_until(thread: threading.Thread, answers: dict[str, Any], start: EarlyStart) -> None:
    pending = bytearray()
    kept = bytearray()  # lines for the SDK, in order
    answering = True
    while thread.is_alive():
        readable, _, _ = select.select([0], [], [], _POLL_S)
        if not readable:
            continue
        try:
            chunk = os.read(0, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break  # end of input (or a broken one): the SDK finds it so too
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            line = bytes(pending[: end + 1])
            del pending[: end + 1]
            try:
                served = _answer(line, answers) if answering else None
            except OSError:  # stdout is gone: nothing more is answered here, and the SDK will find it gone too
                answering, served = False, None
            if served is None or served.method == LISTEN:
                answering = answering and b'"initialize"' not in line  # a 2025-era session: the SDK's from here
                kept += line
            if served is not None:
                start.served.append(served)
    start.leftover = bytes(kept + pending)


def _answer(line: bytes, answers: Mapping[str, Any]) -> Served | None:
    """Answer `line` from the cache when it is an early request with the very params answered before."""
    try:
        request: object = json.loads(line)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    message = cast("dict[str, Any]", request)
    method, request_id = message.get("method"), message.get("id")
    if method not in EARLY_METHODS or not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return None
    known = answers.get(method)
    digest = params_digest(message.get("params"))
    if not isinstance(known, dict) or cast("dict[str, Any]", known).get("params") != digest:
        return None
    answer = cast("dict[str, Any]", known)["result"]
    if method == LISTEN:
        params = {**cast("dict[str, Any]", answer), "_meta": {SUBSCRIPTION_ID: request_id}}
        response: dict[str, Any] = {"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": params}
    else:
        response = {"jsonrpc": "2.0", "id": request_id, "result": answer}
    _write_all(1, (json.dumps(response, separators=(",", ":"), ensure_ascii=False) + "\n").encode())
    return Served(str(method), digest, line)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def early_requests(line: bytes | str) -> tuple[str, str] | None:
    """(method, params digest) of a request whose answer the cache may keep: an early method of the 2026 era."""
    raw = line.encode() if isinstance(line, str) else line
    if not any(f'"{method}"'.encode() in raw for method in EARLY_METHODS):
        return None
    try:
        request: object = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    message = cast("dict[str, Any]", request)
    params: object = message.get("params")
    meta: object = cast("dict[str, Any]", params).get("_meta") if isinstance(params, dict) else None
    if message.get("method") not in EARLY_METHODS or not isinstance(meta, dict):
        return None
    if "io.modelcontextprotocol/protocolVersion" not in cast("dict[str, Any]", meta):
        return None  # a 2025-era request: its answer depends on the session, not on the request
    return str(message["method"]), params_digest(message.get("params"))
