"""The fake Messages API (tests/fakes/fake_llm.py) as a process of its own, for the benchmarks.

    python bench/fake_api.py SCRIPT LATENCY_S [ANSWER_BYTES]

prints its base URL on one line, serves until its stdin closes. Every request is answered after LATENCY_S by SCRIPT:

- `todo:N`: N TodoWrite calls, then the answer `finished <prompt>` (padded to ANSWER_BYTES when given);
- `read`: one Read of the path the prompt names (`read /abs/path`), then the answer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn

TODOS = {"todos": [{"content": "Measure the server", "status": "in_progress", "activeForm": "Measuring the server"}]}


def _prompt(body: dict[str, Any]) -> str:
    """The task's own prompt: the last text block of the first message (context blocks come before it)."""
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


def script(name: str, answer_bytes: int) -> Callable[[dict[str, Any]], Turn]:
    def answer(body: dict[str, Any]) -> Turn:
        words = f"finished {_prompt(body)}"
        return turn(text(words + "." * max(0, answer_bytes - len(words))))

    def assistant_turns(body: dict[str, Any]) -> int:
        return sum(1 for message in body["messages"] if message["role"] == "assistant")

    if name.startswith("todo:"):
        tool_turns = int(name.removeprefix("todo:"))

        def todo(body: dict[str, Any]) -> Turn:
            return turn(tool_use("TodoWrite", TODOS)) if assistant_turns(body) < tool_turns else answer(body)

        return todo
    if name == "read":

        def read(body: dict[str, Any]) -> Turn:
            if assistant_turns(body):
                return answer(body)
            return turn(tool_use("Read", {"file_path": _prompt(body).removeprefix("read ")}))

        return read
    raise SystemExit(f"unknown script {name!r}")


def main(name: str, latency_s: float, answer_bytes: int = 0) -> None:
    with FakeLLM() as fake:
        fake.latency = latency_s
        answer = script(name, answer_bytes)

        def forgetting(body: dict[str, Any]) -> Turn:
            """The tests' fake keeps every request for its assertions: here thousands of long ones would fill memory."""
            fake.requests.clear()
            return answer(body)

        fake.default = forgetting
        print(fake.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
