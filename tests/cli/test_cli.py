from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from mcp_subagents.cli import main
from tests.support import write_agent


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str


class RunCli(Protocol):
    def __call__(self, *args: str, home: Path, **variables: str) -> Finished: ...


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> RunCli:
    """`main(args)` in this process, in the environment a command started from a clean shell would get: HOME is
    `home` (and the working directory), PATH is kept, nothing else (no provider key, no MCP_SUBAGENTS_* variable of
    the runner's)."""

    def run(*args: str, home: Path, **variables: str) -> Finished:
        with monkeypatch.context() as scoped:
            for name in list(os.environ):
                if name != "PATH":
                    scoped.delenv(name)
            for name, value in {"HOME": str(home), **variables}.items():
                scoped.setenv(name, value)
            scoped.chdir(home)
            capsys.readouterr()
            try:
                main(list(args))
                code = 0
            except SystemExit as exited:
                code = exited.code if isinstance(exited.code, int) else 1
            out, err = capsys.readouterr()
        return Finished(code, out, err)

    return run


def test_console_script_and_module_both_show_help(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "mcp-subagents"
    by_script = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    by_module = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    for result in (by_script, by_module):
        assert result.returncode == 0
        assert "serve" in result.stdout and "agents" in result.stdout and "run" in result.stdout
        assert "tasks" in result.stdout and "dashboard" in result.stdout


def test_each_command_offers_its_own_options(tmp_path: Path, run_cli: RunCli) -> None:
    serve_help = run_cli("serve", "--help", home=tmp_path).stdout
    for flag in (
        "--transport",
        "--host",
        "--port",
        "--cwd",
        "--agents-dir",
        "--plugin-dir",
        "--agents",
        "--settings",
        "--model",
        "--state-dir",
        "MCP_SUBAGENTS_TRANSPORT",
        "--max-budget-usd",
        "--otel",
        "--dashboard",
        "--dashboard-port",
    ):
        assert flag in serve_help
    # Each command is built with only its own options: each must still offer them.
    for command, flags in (
        (["run"], ("--resume", "--raw", "--agents-dir", "--state-dir", "--model")),
        (["agents", "list"], ("--json", "--agents-dir", "--settings")),
        (["dashboard"], ("--port", "--state-dir")),
        (["tasks", "list"], ("--json", "--state-dir")),
        (["tasks", "stop"], ("--state-dir",)),
    ):
        shown = run_cli(*command, "--help", home=tmp_path).stdout
        assert all(flag in shown for flag in flags), (command, shown)
    assert "--state-dir" in run_cli("--state-dir", str(tmp_path), "--help", home=tmp_path).stdout  # serve assumed


def test_agents_list_json_shows_agents_and_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / "agents"
    write_agent(folder, "reviewer", description="Reviews code", extra="tools: Read, Grep\nmodel: opus\n")
    (folder / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exited:  # a file failed to load
        main(["agents", "list", "--json", "--agents-dir", str(folder), "--cwd", str(tmp_path)])
    assert exited.value.code == 1
    listing = json.loads(capsys.readouterr().out)
    by_name = {agent["name"]: agent for agent in listing["agents"]}
    assert {"general-purpose", "Explore", "Plan", "Bash", "reviewer"} <= set(by_name)
    reviewer = by_name["reviewer"]
    assert reviewer["tools"] == ["Read", "Grep"] and reviewer["model"] == "opus"
    assert reviewer["file"].endswith("reviewer.md") and reviewer["description"] == "Reviews code"
    assert set(reviewer) == {"name", "source", "model", "tools", "disallowedTools", "description", "file", "problem"}
    assert by_name["Explore"]["source"] == "built-in"
    assert [Path(e["path"]).name for e in listing["errors"]] == ["broken.md"]
    assert listing["errors"][0]["error"]


def test_agents_list_text_mentions_failures_and_exits_1(tmp_path: Path, run_cli: RunCli) -> None:
    """Like `ls` with a file it cannot read: what loaded is listed, and the status says something failed."""
    folder = tmp_path / "agents"
    (folder).mkdir()
    (folder / "nodesc.md").write_text("---\nname: nodesc\n---\nbody\n", encoding="utf-8")
    result = run_cli("agents", "list", "--agents-dir", str(folder), home=tmp_path)
    assert result.code == 1
    assert "general-purpose" in result.stdout
    assert "nodesc.md" in result.stdout and "failed to load" in result.stdout


def test_validate_reports_problems_and_exits_1(tmp_path: Path, run_cli: RunCli) -> None:
    good = write_agent(tmp_path / "good", "fine", extra="tools: Read, Bash\n")
    bad = write_agent(tmp_path / "bad", "odd", extra="tools: Read, Teleport\nmodel: sonet\nflavour: mint\n")
    ok = run_cli("agents", "validate", str(good), home=tmp_path)
    assert ok.code == 0, ok.stdout + ok.stderr
    failed = run_cli("agents", "validate", str(tmp_path / "bad"), str(good), home=tmp_path)
    assert failed.code == 1
    lines = failed.stdout.splitlines()
    assert all(line.startswith(f"{bad}: ") for line in lines)
    joined = failed.stdout
    assert "Teleport" in joined and "flavour" in joined and "sonet" in joined


@pytest.mark.parametrize("content", [None, "README.md"])
def test_validate_without_any_agent_file_says_so_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    if content is not None:
        (folder / content).write_text("# Our agents\n\nThey live here.\n", encoding="utf-8")
    for path in (folder, folder / content) if content else (folder,):
        with pytest.raises(SystemExit) as exited:
            main(["agents", "validate", str(path)])
        assert exited.value.code == 1
        out, err = capsys.readouterr()
        assert out == (
            f"{path}: no agent file found: agent files are Markdown files (*.md) that start with a '---' "
            "frontmatter block (Markdown without one, such as a README.md, is skipped)\n"
        )
        assert "all files are valid" not in err and "1 file(s) failed" in err


def test_the_built_in_agents_pass_the_validator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_subagents.definitions import builtin_agents_dir

    builtin = builtin_agents_dir()
    assert builtin is not None
    with pytest.raises(SystemExit) as exited:
        main(["agents", "validate", str(builtin)])
    out, err = capsys.readouterr()
    assert (exited.value.code, out, err) == (0, "", "all files are valid\n")


def test_run_without_a_provider_says_so(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("run", "Explore", "look around", "--cwd", str(tmp_path), home=tmp_path)
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.startswith("mcp-subagents: No model provider is configured")
    raw = run_cli("run", "Explore", "look around", "--cwd", str(tmp_path), "--raw", home=tmp_path)
    assert raw.code == 1
    assert raw.stdout.startswith('<task_error agent="Explore">No model provider is configured')


def test_bad_environment_value_is_a_clear_startup_error(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("serve", home=tmp_path, MCP_SUBAGENTS_PORT="abc")
    assert result.code == 2
    assert "MCP_SUBAGENTS_PORT" in result.stderr
    assert result.stdout == ""


def test_agents_list_and_validate_warn_about_an_untrusted_projects_hooks_and_servers(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = tmp_path / "repo"
    agent = write_agent(project / ".claude" / "agents", "hooked", extra="hooks: {Stop: [{hooks: [{command: x}]}]}\n")
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": []}}), encoding="utf-8")
    listed = run_cli("agents", "list", "--cwd", str(project), home=tmp_path).stdout
    validated = run_cli("agents", "validate", str(agent), home=tmp_path)
    assert (
        f"warning: agent hooked: its hooks and MCP servers are skipped: the project {project} is not trusted" in listed
    )
    assert f"warning: {project / '.claude' / 'settings.json'}: its hooks are skipped" in listed
    assert "its hooks and MCP servers are skipped until the project is trusted" in validated.stdout
    (tmp_path / ".claude.json").write_text(
        json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}), encoding="utf-8"
    )
    assert "skipped" not in run_cli("agents", "list", "--cwd", str(project), home=tmp_path).stdout
    assert "skipped" not in run_cli("agents", "validate", str(agent), home=tmp_path).stdout


def test_commands_let_worker_threads_have_the_interpreter_within_a_millisecond(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the event loop busy, a Read in a worker thread waited Python's default 5 ms at each of its system
    calls (bench/search.py: 670 ms against 23 ms at 1 ms): every command that runs tasks sets 1 ms."""
    asked: list[float] = []
    monkeypatch.setattr(sys, "setswitchinterval", asked.append)
    with pytest.raises(SystemExit):
        main(["tasks", "list", "--state-dir", str(tmp_path)])
    capsys.readouterr()
    assert asked == [0.001]


@pytest.mark.parametrize(
    ("command_line", "said"),
    [
        (["--bogus"], "mcp-subagents serve: unknown option --bogus (see mcp-subagents serve --help)"),
        (["serve", "--port"], "mcp-subagents serve: --port needs a value (see mcp-subagents serve --help)"),
        (["run", "--bogus", "Explore", "go"], "mcp-subagents run: unknown option --bogus (see mcp-subagents run"),
        (["agents", "list", "--wrong"], "mcp-subagents agents list: unknown option --wrong"),
        (["agents", "validate"], "mcp-subagents agents validate: missing PATH"),
        (["agents"], "mcp-subagents agents: missing ACTION: one of list, validate"),
        (["tasks"], "mcp-subagents tasks: missing ACTION: one of list, show, tail, stop, answer"),
        (["tasks", "lsit"], "mcp-subagents tasks: unknown action 'lsit': one of list, show, tail, stop, answer"),
        (["tasks", "show", "abc", "def"], "mcp-subagents tasks show: unexpected argument 'def'"),
        (["tasks", "answer", "abc", "--allow", "--deny"], "tasks answer: --deny and --allow cannot go together"),
        (["tasks", "answer", "abc"], "mcp-subagents tasks answer: give --allow, --always or --deny"),
        (["agents", "list", "--json=1"], "mcp-subagents agents list: --json takes no value"),
        (["srve"], "mcp-subagents: unknown command 'srve': one of serve, run, agents, dashboard, tasks"),
        (["dashboard", "--port", "notanumber"], "--port: must be a port number from 0 to 65535 (0 picks a free one)"),
    ],
)
def test_a_wrong_command_line_is_one_line_that_points_to_help(
    command_line: list[str], said: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """Not argparse's usage block (forty lines for `serve`) nor Python's conversion messages."""
    result = run_cli(*command_line, home=tmp_path)
    assert (result.code, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1 and said in result.stderr
    assert result.stderr.rstrip().endswith("--help)")


@pytest.mark.parametrize("command", [["serve"], ["run", "Explore", "go"], ["dashboard"]])
def test_a_value_that_is_not_a_number_is_named_in_plain_words(
    command: list[str], tmp_path: Path, run_cli: RunCli
) -> None:
    flag = "--dashboard-port" if command == ["serve"] else "--max-turns"
    result = run_cli(*command, flag, "many", home=tmp_path)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"mcp-subagents {command[0]}: {flag}: must be ") and "got 'many'" in result.stderr
    assert result.stderr.endswith(f"(see mcp-subagents {command[0]} --help)\n")
    assert "int()" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_dashboard_on_a_taken_port_fails_in_one_line(tmp_path: Path, run_cli: RunCli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("dashboard", "--port", str(port), "--state-dir", str(tmp_path / "state"), home=tmp_path)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        f"mcp-subagents: dashboard: cannot listen on 127.0.0.1:{port}: Address already in use; is another dashboard "
        "running there? choose another --port\n"
    )
