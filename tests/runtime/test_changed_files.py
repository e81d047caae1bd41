"""The files a task changed, in its result: through Write and Edit (exact line counts), through Bash (found by the
project scan, or remembered before a redirect), outside the allowed folders, rolled up from nested tasks, kept by a
resumed task and by a restarted server, and bounded in the host's text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.core.messages import UserMessage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel, text, tool_call
from tests.agent.test_worktrees import isolated_agent, repository
from tests.agent.test_worktrees import task as worktree_task
from tests.support import connected, make_settings, matched, text_of, write_agent

pytestmark = pytest.mark.anyio


def task(agent: str, **more: Any) -> dict[str, Any]:
    return {"description": "change files", "prompt": "Change the files.", "subagent_type": agent, **more}


def listed(body: str) -> list[str]:
    """The lines of the result's changed-files note."""
    note = body.split("[Files the task changed", 1)[1].split("</task_", 1)[0]
    return note.removesuffix("]").splitlines()[1:]


async def test_write_edit_and_bash_changes_are_listed_with_line_counts(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None and settings.cwd is not None
    work = settings.cwd
    (work / "app.py").write_text("a\nb\nc\n")
    (work / "old.txt").write_text("gone\n")
    (work / "data.bin").write_bytes(b"\0\1")
    write_agent(settings.user_agents_dir, "worker")
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": str(work / "new.py"), "content": "one\ntwo\n"}),
            tool_call("Edit", {"file_path": str(work / "app.py"), "old_string": "b\n", "new_string": "B\nB2\n"}),
            tool_call("Bash", {"command": "rm old.txt && printf 'x\\0y' > data.bin && mkdir d && echo hi > d/made"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("worker")))
    assert f"[Files the task changed (5) under {work.resolve()}:" in body
    assert listed(body) == [
        "modified app.py (+2 -1)",
        "created d/made (+1)",
        "modified data.bin (binary)",
        "created new.py (+2)",
        "deleted old.txt",
    ]


async def test_a_bash_redirect_outside_the_allowed_folders_is_marked(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    outside = tmp_path / "elsewhere.log"
    outside.write_text("first\n")
    write_agent(settings.user_agents_dir, "worker")
    model = ScriptedModel([tool_call("Bash", {"command": f"echo second >> {outside}"}), text("done")])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("worker")))
    assert listed(body) == [f"modified {outside.resolve()} (+1 -0) [outside the allowed folders]"]


async def test_a_read_only_task_lists_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None
    (settings.cwd / "a.txt").write_text("a\n")
    model = ScriptedModel([tool_call("Read", {"file_path": str(settings.cwd / "a.txt")}), text("read it")])
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("Explore")))
    assert "Files the task changed" not in body


def parent_and_child(request: ModelRequest) -> ModelResponse:
    opening = request.messages[0]
    first = str(opening.content) if isinstance(opening, UserMessage) else ""
    done = len(request.messages) > 1
    if "child" in first:
        return text("child done") if done else tool_call("Write", {"file_path": "by-child.txt", "content": "c\n"})
    if done:
        return text("parent done")
    child = {"description": "nested", "prompt": "child: write", "subagent_type": "worker"}
    return tool_call("Agent", child)


async def test_nested_changes_roll_up_marked_with_the_child(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "worker")
    async with connected(settings, model=FunctionModel(parent_and_child)) as client:
        body = text_of(await client.call_tool("Task", task("worker")))
        parent_id = re.findall(r"task_id: (\w+)", body)[-1]
        status = text_of(await client.call_tool("TaskOutput", {"task_id": parent_id}))
    [child_id] = re.findall(r"by task (\w+)", body)
    assert child_id != parent_id and child_id in status.split("<subtasks>")[1]
    assert listed(body) == [f"created by-child.txt (+1) [by task {child_id}]"]


async def test_a_resumed_task_keeps_its_list_and_a_restart_keeps_it_too(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "worker")
    first = ScriptedModel([tool_call("Write", {"file_path": "a.txt", "content": "1\n"}), text("first")])
    async with connected(settings, model=first) as client:
        body = text_of(await client.call_tool("Task", task("worker")))
    task_id = re.findall(r"task_id: (\w+)", body)[-1]
    second = ScriptedModel(
        [tool_call("Edit", {"file_path": "a.txt", "old_string": "1", "new_string": "1\n2"}), text("second")]
    )
    async with connected(settings, model=second) as client:  # a new server process: the list came from disk
        resumed = text_of(await client.call_tool("Task", task("worker", resume=task_id)))
        again_id = re.findall(r"task_id: (\w+)", resumed)[-1]
        shown = text_of(await client.call_tool("TaskOutput", {"task_id": again_id}))
    assert listed(resumed) == ["created a.txt (+2)"]
    assert listed(shown) == ["created a.txt (+2)"]


async def test_the_host_text_lists_a_bounded_number_of_files(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    assert settings.user_agents_dir is not None
    write_agent(settings.user_agents_dir, "worker")
    model = ScriptedModel(
        [tool_call("Bash", {"command": "for i in $(seq 1000 1999); do echo $i > f$i; done"}), text("ok")]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", task("worker")))
    lines = listed(body)
    assert "[Files the task changed (1000)" in body
    assert len(lines) == 31 and lines[0] == "created f1000 (+1)" and lines[-1] == "... and 970 more"


async def test_an_isolated_task_lists_its_worktree_changes_under_the_worktree(tmp_path: Path) -> None:
    settings = repository(tmp_path, permission_mode="bypassPermissions")
    assert settings.cwd is not None
    isolated_agent(settings)
    model = ScriptedModel(
        [
            tool_call("Edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "uno\ndos"}),
            tool_call("Bash", {"command": "echo made > made.txt"}),
            text("done"),
        ]
    )
    async with connected(settings, model=model) as client:
        body = text_of(await client.call_tool("Task", worktree_task("isolated")))
    worktree = matched(r"worktreePath: (\S+)", body)
    assert f"[Files the task changed (2) under {worktree}:" in body
    assert listed(body) == ["created made.txt (+1)", "modified notes.txt (+2 -1)"]


async def test_a_stopped_task_lists_what_it_changed_before_the_stop(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, permission_mode="bypassPermissions")
    arrived, never = anyio.Event(), anyio.Event()

    async def hang(_request: ModelRequest) -> ModelResponse:
        arrived.set()
        await never.wait()
        raise AssertionError("unreachable")

    model = ScriptedModel([tool_call("Bash", {"command": "echo a > half.txt"}), hang])
    async with connected(settings, model=model) as client:
        launched = text_of(await client.call_tool("Task", task("general-purpose", run_in_background=True)))
        task_id = matched(r"task_id: (\w+)", launched)
        with anyio.fail_after(10):
            await arrived.wait()
        await client.call_tool("TaskStop", {"task_id": task_id})
        status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id}))
    assert "<status>stopped</status>" in status
    assert listed(status.replace("</task_error>", "</task_result>")) == ["created half.txt (+1)"]
