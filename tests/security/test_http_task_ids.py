"""Task ids cannot be guessed: 128 random bits, and only the whole id finds a task. Before, ids were 32 bits and
were guessed at 174 per second."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest

from mcp_subagents.models.scripted import ScriptedModel, text
from mcp_subagents.render.status import OUTPUT_FILE_TEXTS
from mcp_subagents.tasks.manager import TaskManager
from mcp_subagents.tasks.record import TaskLimits

from ..support import text_of
from .http_harness import ALICE_TOKEN, BACKGROUND_TASK, http_settings, mcp_client, serving, token_file

pytestmark = pytest.mark.anyio


def test_ids_carry_at_least_128_random_bits(tmp_path: Path) -> None:
    manager = TaskManager(state_dir=tmp_path, limits=TaskLimits(), texts=OUTPUT_FILE_TEXTS)
    ids = [manager.new_id() for _ in range(2000)]
    assert all(re.fullmatch(r"[0-9a-f]{32,}", task_id) for task_id in ids)  # 32 hex digits = 128 bits
    assert len(set(ids)) == len(ids)
    for position in range(32):  # every digit is random: close to 4 bits of entropy each, none fixed
        counts = Counter(task_id[position] for task_id in ids)
        entropy = -sum(n / len(ids) * math.log2(n / len(ids)) for n in counts.values())
        assert entropy > 3.9, position


async def test_only_the_whole_id_finds_a_task(tmp_path: Path) -> None:
    settings = http_settings(tmp_path, "streamable-http", auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN))
    async with serving(settings, model=ScriptedModel([text("Found it.")])) as served:
        async with mcp_client(served.url, token=ALICE_TOKEN) as alice:
            launched = text_of(await alice.call_tool("Task", BACKGROUND_TASK))
            task_id = launched.split("task_id: ")[1].split()[0]
            whole = text_of(await alice.call_tool("TaskOutput", {"task_id": task_id}))
            partial = [
                text_of(await alice.call_tool("TaskOutput", {"task_id": guess}))
                for guess in (task_id[:8], task_id[:-1], task_id.upper(), f"{task_id}*")
            ]
    assert "Found it." in whole
    assert all(answer.startswith("No task found with ID: ") for answer in partial)
