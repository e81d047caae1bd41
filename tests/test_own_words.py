"""Our own words: no text a model gets from us repeats Claude Code's wording for eight words or more.

Our side, built as a run builds it: the host tools as `tools/list` gives them (`Task` with agents listed, `TaskOutput`,
`TaskStop`) and what `Task` and `TaskOutput` answer; every request one subagent run sends to a (fake) Messages API (the
system prompt with memory, notes, worktree note, environment and skills listing; every tool and its fields, `Skill`,
`WebSearch` and the nested `Task` among them; the first message with CLAUDE.md, git status and a preloaded skill; a
tool result); the built-in agent files; the compaction texts; and, as a net for what no run shows, every string
literal in the package (docstrings aside). Claude Code's side: every string in its captured request bodies
(`*.cc.json` under ../shared/reference/claude-code-2.1.328/, long strings cut after 400 characters there); our own
`*.mcp.json` captures are left out, they hold our texts.

Both sides are lowercased and cut into words (letters and digits). A run of `RUN_WORDS` or more consecutive words
found on both sides fails the test, unless `ALLOWED` lists it with its reason.
"""

from __future__ import annotations

import ast
import json
import platform
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import mcp_subagents
from mcp_subagents.agent.compaction import continuation_message, summary_messages
from mcp_subagents.config.settings import Settings
from mcp_subagents.core.messages import UserMessage
from mcp_subagents.definitions import builtin_agents_dir, parse_definition
from tests.fakes.fake_llm import FakeLLM, tool_use, turn
from tests.fakes.fake_llm import text as reply
from tests.support import SHARED, connected, make_settings, provider_environment, require_shared, text_of, write_agent

pytestmark = pytest.mark.anyio

CAPTURES = SHARED / "reference" / "claude-code-2.1.328"
RUN_WORDS = 8
WordRun = tuple[str, ...]

_DEFAULT_PR_CREDIT = (
    "Claude Code's default pull-request line, the value its `attribution.pr` setting replaces: data the person "
    "configures, given as Claude Code gives it so their settings mean the same here"
)
ALLOWED: dict[str, str] = {
    "generated with claude code https claude com claude code": _DEFAULT_PR_CREDIT,
    "with generated with claude code https claude com claude code system reminder": _DEFAULT_PR_CREDIT,
}
"""Shared runs that are facts anyone would write the same way (normalised words -> why it may stay)."""

KNOWN_CLAUDE_CODE_SENTENCES = (
    # The opening of Claude Code's Agent tool description, which our Task description repeated word for word.
    "Launch a new agent to handle complex, multi-step tasks. Each agent type has specific capabilities and tools "
    "available to it.",
    # Its Read tool's `file_path` field and its Bash tool's first line.
    "The absolute path to the file to read",
    "Executes a bash command and returns its output.",
    # A note of its subagent system prompt.
    "In your final response, share file paths (always absolute, never relative) that are relevant to the task.",
)
"""Sentences that are in the captures (the first test checks it): the detector must report each of them."""


@dataclass(frozen=True, slots=True)
class Passage:
    where: str
    text: str


@dataclass(frozen=True, slots=True)
class SharedRun:
    words: str
    ours: str
    theirs: str


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


_CUT_MARK = re.compile(r"\.\.\.\[cut: \d+ chars in all\]$")


def strings_in(value: Any, where: str) -> Iterator[Passage]:
    """Every string value in a JSON document, with its path; the captures' cut mark is dropped."""
    if isinstance(value, str):
        yield Passage(where, _CUT_MARK.sub("", value))
    elif isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield from strings_in(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            yield from strings_in(item, f"{where}[{index}]")


@cache
def claude_code_runs() -> dict[WordRun, str]:
    """Every `RUN_WORDS`-word run in Claude Code's captured requests -> where it was first seen."""
    index: dict[WordRun, str] = {}
    for path in sorted(CAPTURES.rglob("*.cc.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for found in strings_in(document, str(path.relative_to(CAPTURES))):
            cut = words(found.text)
            for start in range(len(cut) - RUN_WORDS + 1):
                index.setdefault(tuple(cut[start : start + RUN_WORDS]), found.where)
    return index


def shared_runs(ours: Iterable[Passage], theirs: dict[WordRun, str]) -> list[SharedRun]:
    """The longest runs of our texts' words that Claude Code's texts hold too (each `RUN_WORDS` long window is in
    theirs), one entry per run and place."""
    found: list[SharedRun] = []
    for passage in ours:
        cut = words(passage.text)
        start = 0
        while start <= len(cut) - RUN_WORDS:
            window = tuple(cut[start : start + RUN_WORDS])
            if window not in theirs:
                start += 1
                continue
            end = start + RUN_WORDS
            while end < len(cut) and tuple(cut[end - RUN_WORDS + 1 : end + 1]) in theirs:
                end += 1
            found.append(SharedRun(" ".join(cut[start:end]), passage.where, theirs[window]))
            start = end
    return found


def report(runs: list[SharedRun]) -> str:
    by_words: dict[str, list[SharedRun]] = {}
    for run in runs:
        by_words.setdefault(run.words, []).append(run)
    lines: list[str] = []
    for run_words, places in sorted(by_words.items()):
        ours = "; ".join(dict.fromkeys(place.ours for place in places))
        lines += [f'"{run_words}"', f"    ours: {ours}", f"    Claude Code: {places[0].theirs}"]
    return "\n".join(lines)


# ---- our texts ----------------------------------------------------------------------------------------------------


def literals_in_package() -> Iterator[Passage]:
    """Every string literal in the package's modules, docstrings left out (a bare string statement is never sent).
    The parts of an f-string come one by one: what a value fills in is not ours to judge."""
    package = Path(mcp_subagents.__file__).parent
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                yield Passage(f"{path.relative_to(package.parent)}:{node.lineno}", node.value)


def builtin_agent_texts() -> Iterator[Passage]:
    folder = builtin_agents_dir()
    assert folder is not None, "the built-in agents were not found"
    for path in sorted(folder.glob("*.md")):
        definition = parse_definition(path.read_text(encoding="utf-8"), path=path, source="built-in")
        yield Passage(f"built-in agent {path.name}: description", definition.description)
        yield Passage(f"built-in agent {path.name}: body", definition.prompt)


def compaction_texts() -> Iterator[Passage]:
    request = summary_messages((UserMessage(content="Start."),))[-1]
    assert isinstance(request, UserMessage)
    yield Passage("compaction: summary request", request.content)
    yield Passage("compaction: continuation", continuation_message("SUMMARY", None).content)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)


def project(tmp_path: Path) -> Settings:
    """A git project with a CLAUDE.md, an uncommitted change, a skill and an agent that uses every extra: memory, a
    preloaded skill, all tools (so the Skill tool and the nested Task)."""
    settings = make_settings(tmp_path)
    cwd = settings.cwd
    assert cwd is not None and settings.user_agents_dir is not None
    git(cwd, "init", "-q", "-b", "main")
    git(cwd, "config", "user.email", "dev@example.com")
    git(cwd, "config", "user.name", "Dev")
    (cwd / "CLAUDE.md").write_text("PROJECT-RULE\n", encoding="utf-8")
    skill = cwd / ".claude" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: TIDY-SKILL\n---\nTIDY-BODY\n", encoding="utf-8")
    git(cwd, "add", ".")
    git(cwd, "commit", "-q", "-m", "init")
    (cwd / "CLAUDE.md").write_text("PROJECT-RULE changed\n", encoding="utf-8")
    write_agent(settings.user_agents_dir, "scout", body="SCOUT-BODY", extra="memory: project\nskills: [tidy]\n")
    write_agent(settings.user_agents_dir, "helper", description="HELPER-DESCRIPTION", extra="tools: Read\n")
    return settings


async def served_texts(tmp_path: Path, fake: FakeLLM) -> list[Passage]:
    """The host tools, and what one worktree run of `scout` sends to the model and answers the host."""
    settings = project(tmp_path)
    fake.push(turn(tool_use("Skill", {"skill": "tidy"})), turn(reply("DONE")))
    environ = provider_environment(fake, "sk-ant-test-own-words-0123456789")
    task = {"description": "look", "prompt": "LOOK", "subagent_type": "scout", "isolation": "worktree"}
    async with connected(settings, environ=environ) as client:
        listed = await client.list_tools()
        result = await client.call_tool("Task", task)
        assert not result.is_error, text_of(result)
        task_id = re.findall(r"task_id: (\w+)", text_of(result))[-1]
        status = await client.call_tool("TaskOutput", {"task_id": task_id})
    texts: list[Passage] = []
    for tool in listed.tools:
        texts += strings_in(tool.model_dump(include={"description", "inputSchema"}), f"host tool {tool.name}")
    texts += [Passage("host: Task result", text_of(result)), Passage("host: TaskOutput result", text_of(status))]
    for number, request in enumerate(fake.requests, 1):
        texts += strings_in(request["body"], f"subagent request {number}: body")
    # The kernel's release is data, not wording, and the captures were made on this machine's kernel.
    return [Passage(t.where, t.text.replace(platform.release(), "RELEASE")) for t in texts]


async def our_texts(tmp_path: Path, fake: FakeLLM) -> list[Passage]:
    return [
        *await served_texts(tmp_path, fake),
        *builtin_agent_texts(),
        *compaction_texts(),
        *literals_in_package(),
    ]


# ---- the tests ----------------------------------------------------------------------------------------------------


def test_the_detector_reports_claude_code_sentences_found_in_the_captures() -> None:
    require_shared(CAPTURES, "Claude Code 2.1.328 captures")
    theirs = claude_code_runs()
    for sentence in KNOWN_CLAUDE_CODE_SENTENCES:
        runs = shared_runs([Passage("planted", f"Our words first. {sentence} Our words after.")], theirs)
        assert [run.words for run in runs] == [" ".join(words(sentence))], sentence


async def test_the_texts_gathered_cover_every_prompt_and_tool(tmp_path: Path, fake: FakeLLM) -> None:
    texts = await our_texts(tmp_path, fake)
    places = {text.where for text in texts}
    for host_tool in ("Task", "TaskOutput", "TaskStop"):
        assert f"host tool {host_tool}.description" in places, host_tool
    sent = [text for text in texts if text.where.startswith("subagent request 1: ")]
    tool_names = {text.text for text in sent if re.fullmatch(r".*\.tools\[\d+\]\.name", text.where)}
    assert tool_names >= {"Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite", "WebSearch"}
    assert tool_names >= {"Skill", "Agent"}
    system = "\n".join(text.text for text in sent if ".system[" in text.where)
    for marker in ("SCOUT-BODY", "agent-memory", "TIDY-SKILL", "git worktree"):
        assert marker in system, marker  # the body, memory, the skills listing, the worktree note
    first = "\n".join(text.text for text in sent if ".messages[0]." in text.where)
    for marker in ("PROJECT-RULE", "Current branch: ", "TIDY-BODY"):
        assert marker in first, marker  # CLAUDE.md, git status, the preloaded skill
    modules = {passage.where.rpartition(":")[0] for passage in texts if passage.where.endswith(tuple("0123456789"))}
    assert len(modules) > 50, modules  # the net over the package's literals saw its modules
    assert "tool_result" in {text.text for text in texts if text.where.startswith("subagent request 2: ")}
    assert "HELPER-DESCRIPTION" in "\n".join(t.text for t in texts if t.where == "host tool Task.description")


async def test_no_text_of_ours_repeats_claude_code_for_eight_words(tmp_path: Path, fake: FakeLLM) -> None:
    require_shared(CAPTURES, "Claude Code 2.1.328 captures")
    runs = shared_runs(await our_texts(tmp_path, fake), claude_code_runs())
    copied = [run for run in runs if run.words not in ALLOWED]
    assert not copied, f"{len({r.words for r in copied})} runs of our texts repeat Claude Code's:\n{report(copied)}"
    stale = set(ALLOWED) - {run.words for run in runs}
    assert not stale, f"ALLOWED lists runs no text shares any more: {sorted(stale)}"
