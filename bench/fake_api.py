"""The fake Messages API (tests/fakes/fake_llm.py) as a process of its own, for the benchmarks.

    python bench/fake_api.py SCRIPT LATENCY_S [ANSWER_BYTES] [--log FILE]

prints its base URL on one line, serves until its stdin closes. Every request is answered after LATENCY_S by SCRIPT:

- `todo:N`: N TodoWrite calls, then the answer `finished <prompt>` (padded to ANSWER_BYTES when given);
- `read`: one Read of the path the prompt names (`read /abs/path`), then the answer;
- `host`: Claude Code's main model and the subagents it starts, ours or its own (bench/host.py): the prompt of
  `claude -p` says what the main model does (see `host_step`).

`--log FILE` appends each request's body to FILE as one JSON line (the file is opened for each request, so the
reader may empty it between runs).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.fake_llm import FakeLLM, Step, Turn, text, tool_use, turn

TODOS = {"todos": [{"content": "Measure the server", "status": "in_progress", "activeForm": "Measuring the server"}]}


def _prompt(body: dict[str, Any]) -> str:
    """The task's own prompt: the last text block of the first message (context blocks come before it)."""
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


# ---- `host`: Claude Code's main model, and the subagents it starts -------------------------------------------------

HOST_TEXT = "HOST-TEXT"
"""In the prompt of `claude -p`: the main model answers at once."""
HOST_TASK = "HOST-TASK"
"""The main model delegates to our `mcp__subagents__Task` (after ToolSearch when Claude Code has not listed it)."""
HOST_AGENT = "HOST-AGENT"
"""The main model delegates to Claude Code's own `Agent` tool, in the foreground."""
OUR_TASK = "mcp__subagents__Task"
SUBAGENT_DONE = "SUBAGENT-DONE"
MAIN_DONE = "MAIN-DONE"
MAIN_GAVE_UP = "MAIN-GAVE-UP"
CLAUDE_CODE_HEADER = "x-anthropic-billing-header"
"""The first system block of every request Claude Code sends; its subagents' requests add `cc_is_subagent=true`."""
DELEGATED_PROMPT = "Read {path} and say what it holds."


def _text_of(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(block.get("text", "")) for block in content)


def claude_code_header(body: dict[str, Any]) -> str:
    """The billing header Claude Code puts first in its system prompt; "" for a request it did not send (ours)."""
    system: str | list[dict[str, Any]] = body.get("system") or ""
    first = system if isinstance(system, str) else str(system[0].get("text", "")) if system else ""
    return first if first.startswith(CLAUDE_CODE_HEADER) else ""


def is_main_request(body: dict[str, Any]) -> bool:
    """A request of Claude Code's main conversation: its header without `cc_is_subagent`, and its `Agent` tool."""
    header = claude_code_header(body)
    names = {tool.get("name") for tool in body.get("tools", [])}
    return bool(header) and "cc_is_subagent=true" not in header and "Agent" in names


def tool_result_texts(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in the conversation, in order."""
    texts: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        if message["role"] != "user" or isinstance(content, str):
            continue
        texts += [_text_of(block.get("content") or "") for block in content if block.get("type") == "tool_result"]
    return texts


def _subagent(body: dict[str, Any]) -> Turn:
    """Ours or Claude Code's: one Read of the file the prompt names, then the same answer."""
    if tool_result_texts(body):
        return turn(text(f"{SUBAGENT_DONE}: the file says hello."))
    path = re.search(r"Read (/\S+) and say", _text_of(body["messages"][0]["content"]))
    return turn(tool_use("Read", {"file_path": path.group(1) if path else "/nonexistent"}))


def _delegation(prompt: str) -> dict[str, Any]:
    path = re.search(r"notes file: (/\S+)", prompt)
    task = DELEGATED_PROMPT.format(path=path.group(1) if path else "/nonexistent")
    return {"description": "read the notes", "prompt": task, "subagent_type": "general-purpose"}


def _main(body: dict[str, Any]) -> Turn:
    prompt = _text_of(body["messages"][0]["content"])
    results = tool_result_texts(body)
    names = {tool.get("name") for tool in body.get("tools", [])}
    if HOST_TEXT in prompt:
        return turn(text(MAIN_DONE))
    if any(SUBAGENT_DONE in result for result in results):
        return turn(text(MAIN_DONE))
    if len(results) >= 4:  # a model that found no way to delegate says so
        return turn(text(MAIN_GAVE_UP))
    if HOST_AGENT in prompt:
        return turn(tool_use("Agent", {**_delegation(prompt), "run_in_background": False}))
    if OUR_TASK in names:
        return turn(tool_use(OUR_TASK, _delegation(prompt)))
    return turn(tool_use("ToolSearch", {"query": f"select:{OUR_TASK}", "max_results": 1}))


def host_step(body: dict[str, Any]) -> Turn:
    """Claude Code's main model (by the marker in its prompt), its subagents and ours (one Read each), and a plain
    answer for anything else Claude Code asks on its own."""
    header = claude_code_header(body)
    if not header or "cc_is_subagent=true" in header:
        return _subagent(body)
    return _main(body) if is_main_request(body) else turn(text("ok"))


def script(name: str, answer_bytes: int) -> Step:
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
    if name == "host":
        return host_step
    raise SystemExit(f"unknown script {name!r}")


def logged(step: Step, log: Path) -> Step:
    """`step`, appending each request's body to `log` first."""

    def log_then_answer(body: dict[str, Any]) -> Step:
        with log.open("a", encoding="utf-8") as file:
            file.write(json.dumps(body) + "\n")
        return step

    return log_then_answer


def main(name: str, latency_s: float, answer_bytes: int = 0, log: Path | None = None) -> None:
    with FakeLLM() as fake:
        fake.latency = latency_s
        step = script(name, answer_bytes) if log is None else logged(script(name, answer_bytes), log)

        def forgetting(_body: dict[str, Any]) -> Step:
            """The tests' fake keeps every request for its assertions: here thousands of long ones would fill memory.
            The fake then takes `step` as the answer (calling it with the body when it is a function)."""
            fake.requests.clear()
            return step

        fake.default = forgetting
        print(fake.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("script")
    parser.add_argument("latency_s", type=float)
    parser.add_argument("answer_bytes", type=int, nargs="?", default=0)
    parser.add_argument("--log", type=Path)
    arguments = parser.parse_args()
    main(arguments.script, arguments.latency_s, arguments.answer_bytes, arguments.log)
