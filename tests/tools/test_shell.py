from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment
from tests.processes import is_running, wait_until_gone

from .conftest import CallTool

pytestmark = pytest.mark.anyio


async def test_bash_returns_stdout_then_stderr(call: CallTool) -> None:
    result = await call("Bash", {"command": "echo out; echo err >&2", "description": "Print two lines"})
    assert result == "out\nerr"


async def test_bash_runs_in_the_working_directory(call: CallTool, workdir: Path) -> None:
    assert await call("Bash", {"command": "pwd"}) == str(workdir)


async def test_bash_uses_the_context_environment(workdir: Path) -> None:
    ctx = ToolContext(cwd=workdir, allowed_roots=(workdir,), env={"PATH": os.environ["PATH"], "GREETING": "hi"})
    bash = builtin_tools()["Bash"]
    result = await bash.run(ctx, bash.validate({"command": 'echo "$GREETING/${HOME:-unset}"'}))
    assert result == "hi/unset"


async def test_bash_reports_a_non_zero_exit_code_as_an_error_with_the_output(call: CallTool) -> None:
    with pytest.raises(ToolError) as caught:
        await call("Bash", {"command": "echo partial; exit 3"})
    assert caught.value.message == "partial\nExit code 3"


async def test_bash_with_no_output_says_so(call: CallTool) -> None:
    assert await call("Bash", {"command": "true"}) == "(Command completed with no output)"


async def test_bash_stdin_is_empty(call: CallTool) -> None:
    with anyio.fail_after(5):
        assert await call("Bash", {"command": "cat; echo done"}) == "done"


async def test_bash_replaces_undecodable_output(call: CallTool) -> None:
    assert await call("Bash", {"command": r"printf 'caf\351\n'"}) == "caf\ufffd"


async def test_bash_cuts_the_middle_of_long_output(call: CallTool) -> None:
    command = "printf START; head -c 100000 /dev/zero | tr '\\0' a; printf END"
    result = await call("Bash", {"command": command})
    assert result.startswith("STARTaaa")
    assert result.endswith("aaaEND")
    assert "[70008 characters of output cut]" in result
    assert len(result) < 30_100


async def test_bash_keeps_stderr_when_stdout_is_long(call: CallTool) -> None:
    command = "head -c 100000 /dev/zero | tr '\\0' a; echo 'the error' >&2"
    result = await call("Bash", {"command": command})
    assert result.endswith("aaa\nthe error")


async def test_bash_times_out_with_the_output_so_far(call: CallTool) -> None:
    with anyio.fail_after(5), pytest.raises(ToolError) as caught:
        await call("Bash", {"command": "echo before; sleep 30", "timeout": 300})
    assert caught.value.message == "before\nCommand timed out after 300 ms"


async def test_bash_timeout_kills_the_processes_the_command_started(call: CallTool) -> None:
    with anyio.fail_after(5), pytest.raises(ToolError) as caught:
        await call("Bash", {"command": "sleep 1000 & echo $!; wait", "timeout": 300})
    child = int(caught.value.message.split("\n")[0])
    await wait_until_gone(child)


async def cancel_bash_once_running(call: CallTool, fifo: Path, command: str) -> list[int]:
    """Run `command` (which writes pids to `fifo`), cancel the call once they arrive, return the pids."""
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    pids: list[int] = []
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(call, "Bash", {"command": command})
                await anyio.wait_readable(reader)
                pids += [int(pid) for pid in os.read(reader, 100).split()]
                assert all(is_running(pid) for pid in pids)
                group.cancel_scope.cancel()
    finally:
        os.close(reader)
    return pids


async def test_cancelling_bash_kills_the_shell_and_its_children(call: CallTool, tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    command = f"sleep 1000 & echo \"$$ $!\" > '{fifo}'; bash -c 'sleep 1000 & wait'; wait"
    shell, child = await cancel_bash_once_running(call, fifo, command)
    await wait_until_gone(shell)
    await wait_until_gone(child)


async def test_cancelling_bash_kills_a_child_that_ignores_sigterm(call: CallTool, tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    command = f'bash -c \'trap "" TERM; echo $$ > "{fifo}"; sleep 1000 & wait\''
    [stubborn] = await cancel_bash_once_running(call, fifo, command)
    await wait_until_gone(stubborn)


async def test_bash_returns_when_a_background_job_keeps_the_output_open(call: CallTool) -> None:
    with anyio.fail_after(5):
        result = await call("Bash", {"command": "sleep 30 & echo $!"})
    pid = int(result.split("\n")[0])
    try:
        assert "background process kept the output open" in result
    finally:
        os.kill(pid, signal.SIGKILL)
    await wait_until_gone(pid)


async def test_bash_refuses_background_runs(call: CallTool) -> None:
    with pytest.raises(ToolError, match="not supported"):
        await call("Bash", {"command": "sleep 1", "run_in_background": True})


def test_bash_timeout_is_capped_at_ten_minutes() -> None:
    bash = builtin_tools()["Bash"]
    bash.validate({"command": "ls", "timeout": 600_000})
    with pytest.raises(ToolError, match="timeout"):
        bash.validate({"command": "ls", "timeout": 600_001})


def test_sanitized_environment_drops_provider_secrets() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "ANTHROPIC_API_KEY": "a",
        "ANTHROPIC_AUTH_TOKEN": "b",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1",
        "OPENAI_API_KEY": "c",
        "GROQ_API_KEY": "d",
        "GITHUB_TOKEN": "e",
        "CLIENT_SECRET": "f",
        "MCP_SUBAGENTS_CWD": "/work",
        "MCP_SUBAGENTS_PROVIDER_KEY": "g",
        "MCP_SUBAGENTS_PASSWORD_FILE": "h",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert sanitized_environment(base) == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1",
        "MCP_SUBAGENTS_CWD": "/work",
        "TOKENIZERS_PARALLELISM": "false",
    }


def test_sanitized_environment_leaves_its_input_alone() -> None:
    base = {"OPENAI_API_KEY": "c"}
    sanitized_environment(base)
    assert base == {"OPENAI_API_KEY": "c"}


def test_the_context_fixture_environment_has_no_secrets(ctx: ToolContext) -> None:
    assert not [name for name in ctx.env if re.search(r"_(API_KEY|TOKEN|SECRET)$", name)]
