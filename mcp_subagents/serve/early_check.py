"""Keeping the early answers (`early_answers`) true: every answer the server gives to an early request is kept for
the next start, and each request answered early is asked again of the real server as soon as it runs. Its answer
replaces the cached one, and when the tool list differs from the one the host got, the host is told
(`tools/list_changed`), so it lists the tools again."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio

from .early_answers import LISTEN, SUBSCRIPTION_ID, EarlyStart, early_requests

logger = logging.getLogger(__name__)

_REPLAY_ID = "mcp-subagents-early-check-{}"


class EarlyCheck:
    """Sees the lines the server reads and the messages it writes (`stdio_streams`)."""

    def __init__(self, start: EarlyStart, on_tools_changed: Callable[[], Awaitable[None]]) -> None:
        self._start = start
        self._on_tools_changed = on_tools_changed
        self._asked: dict[str | int, tuple[str, str]] = {}
        """Requests whose answers the cache keeps: id -> (method, params digest)."""
        self._replays: dict[str, bytes] = {}
        """The requests asked again: replay id -> the result the host got early (canonical JSON)."""
        self._acknowledged: set[object] = set()
        """Subscriptions acknowledged early, whose acknowledgement by the SDK is held back."""

    def first_lines(self) -> list[str]:
        """What the server reads first: the requests answered early, under ids of our own, then what the host sent
        meanwhile and nobody answered yet."""
        answers = self._start.cache.load()
        lines: list[str] = []
        for number, served in enumerate(self._start.served):
            request = cast("dict[str, Any]", json.loads(served.line))
            if served.method == LISTEN:  # the SDK reads it among the rest, and keeps the stream
                self._acknowledged.add(request.get("id"))
                continue
            replay_id = _REPLAY_ID.format(number)
            request["id"] = replay_id
            self._replays[replay_id] = _canonical(cast("dict[str, Any]", answers.get(served.method, {})).get("result"))
            self._asked[replay_id] = (served.method, served.digest)
            lines.append(json.dumps(request, separators=(",", ":")) + "\n")
        leftover = self._start.leftover.decode("utf-8", errors="replace")
        return lines + [line for line in leftover.splitlines(keepends=True) if line.strip()]

    def seen(self, line: str) -> None:
        """A line the server reads: remember an early request's id to keep its answer."""
        found = early_requests(line)
        if found is None:
            return
        request_id = cast("dict[str, Any]", json.loads(line)).get("id")
        if isinstance(request_id, str | int):
            self._asked[request_id] = found

    async def answered(self, message_id: object, result: object) -> bool:
        """A response the server writes; True when it answers one of our own replays and is not for the host."""
        if not isinstance(message_id, str | int) or message_id not in self._asked:
            return False
        method, digest = self._asked.pop(message_id)
        if method == LISTEN:
            return False  # the end of a stream, not an answer to keep
        await anyio.to_thread.run_sync(self._start.cache.store, method, digest, result)
        if not isinstance(message_id, str) or message_id not in self._replays:
            return False
        given = self._replays.pop(message_id)
        if method == "tools/list" and given != _canonical(result):
            logger.info("the tool list changed since the host got it from the last start's answer: telling it")
            await self._on_tools_changed()
        return True

    async def acknowledged(self, params: object) -> bool:
        """A subscription's acknowledgement the server writes: kept for the next start; True when the host had one
        early already, so this one is held back."""
        meta: object = cast("dict[str, Any]", params).get("_meta") if isinstance(params, dict) else None
        subscription = cast("dict[str, Any]", meta).get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if not isinstance(subscription, str | int):
            return False
        asked = self._asked.get(subscription)
        if asked is not None and asked[0] == LISTEN:
            kept = {key: value for key, value in cast("dict[str, Any]", params).items() if key != "_meta"}
            await anyio.to_thread.run_sync(self._start.cache.store, LISTEN, asked[1], kept)
        if subscription in self._acknowledged:
            self._acknowledged.discard(subscription)
            return True
        return False


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
