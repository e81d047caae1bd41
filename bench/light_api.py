"""A minimal Messages API for the concurrency figures: HTTP/1.1 keep-alive on a bare TCP server, no framework.

    python bench/light_api.py TOOL_TURNS LATENCY_S

prints its base URL, serves until its stdin closes. Every request is answered after LATENCY_S with a streamed turn:
a TodoWrite call while the conversation has fewer than TOOL_TURNS assistant turns, then `finished <prompt>`.

The tests' fake (uvicorn and Starlette) spends nearly as much CPU per request as the server it serves; on a 2-core
machine it then competes with the server for the cores, where a remote API costs the machine nothing. This one
answers in a fraction of that, with the events the fake sends, each in a chunk of its own as a real stream comes.
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

TODOS = {"todos": [{"content": "Measure the server", "status": "in_progress", "activeForm": "Measuring the server"}]}
_ids = itertools.count(1)


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


def _turn(body: dict[str, Any], tool_turns: int) -> list[bytes]:
    number = next(_ids)
    done = sum(1 for message in body["messages"] if message["role"] == "assistant")
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    shell: dict[str, Any] = {
        "id": f"msg_light_{number}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_event("message_start", {"type": "message_start", "message": shell})]
    block: dict[str, Any]
    if done < tool_turns:
        block = {"type": "tool_use", "id": f"toolu_light_{number}", "name": "TodoWrite", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(TODOS)}
        stop = "tool_use"
    else:
        content = body["messages"][0]["content"]
        prompt = content if isinstance(content, str) else content[-1]["text"]
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": f"finished {prompt}"}
        stop = "end_turn"
    events += [
        _event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}),
        _event("message_stop", {"type": "message_stop"}),
    ]
    head = (
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        f"request-id: req_light_{number}\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    # One chunk per event, each sent on its own, as a real stream arrives.
    chunks = [f"{len(event.encode()):x}\r\n{event}\r\n".encode() for event in events]
    return [head.encode(), *chunks, b"0\r\n\r\n"]


async def _serve(stream: SocketStream, tool_turns: int, latency: float) -> None:
    reader = BufferedByteReceiveStream(stream)
    async with stream:
        while True:
            try:
                head = await reader.receive_until(b"\r\n\r\n", 1 << 16)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = json.loads(await reader.receive_exactly(length))
            await anyio.sleep(latency)
            for piece in _turn(body, tool_turns):
                await stream.send(piece)


async def main(tool_turns: int, latency: float) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.listeners[0].extra(SocketAttribute.local_port)
    print(f"http://127.0.0.1:{port}", flush=True)

    async def serve(stream: SocketStream) -> None:
        await _serve(stream, tool_turns, latency)

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        await anyio.to_thread.run_sync(sys.stdin.read)
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]), float(sys.argv[2]))
