"""Property tests: parsers and validators answer with a value or their own error, never with a crash."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_subagents.core.errors import DefinitionError, ToolError
from mcp_subagents.definitions import parse_definition
from mcp_subagents.permissions import PermissionPolicy, PermissionRules, RuleError, decide, parse_rule
from mcp_subagents.permissions.bash import ShellSyntaxError, split_command
from mcp_subagents.permissions.read_only import read_only
from mcp_subagents.tools import ToolContext, builtin_tools, sanitized_environment

FUZZ = settings(
    max_examples=int(os.environ.get("MCP_SUBAGENTS_FUZZ_EXAMPLES", "150")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""150 examples keep CI fast; set MCP_SUBAGENTS_FUZZ_EXAMPLES=5000 for a deeper run by hand."""

MARKER = "FUZZ-OUTSIDE-MARKER-7f3a"

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)

# --- agent definitions ---------------------------------------------------------------------------

FIELD_NAMES = [
    "name", "description", "tools", "disallowedTools", "model", "permissionMode", "maxTurns", "skills",
    "mcpServers", "hooks", "memory", "background", "effort", "isolation", "color", "initialPrompt",
    "omitClaudeMd", "experimental", "criticalSystemReminder_EXPERIMENTAL", "permission", "when-to-use",
]  # fmt: skip
YAML_SNIPPETS = [
    "name: a", "name: [", "description: x: y: z", "tools: *alias", "tools: &a [*a]", "maxTurns: .inf",
    "maxTurns: 1e400", "model: !!binary aGk=", "name: !!python/object:os.system x", "? [a, b]\n: c",
    "name: '", 'description: "\\x"', "\t- x", "mcpServers: {a: {command: [1]}}", "hooks: [1, {x: }]",
    "permission: {'*': 3}", "tools:\n  - 1\n  - [2]", "1: 2", "null: ~", "true: false", "<<: {a: 1}",
    "description: @at", "---", "...", "%YAML 1.1", "name: \x00",
]  # fmt: skip


def definition_text(fields: dict[str, Any], body: str) -> str:
    return f"---\n{yaml.safe_dump(fields, allow_unicode=True)}---\n{body}"


def parses_or_reports(text: str) -> None:
    try:
        definition = parse_definition(text, path=Path("agent.md"), source="project")
    except DefinitionError as exc:
        assert exc.message.strip()
    else:
        assert definition.name


@FUZZ
@given(st.text(max_size=400))
def test_definition_parser_on_arbitrary_text(text: str) -> None:
    parses_or_reports(text)
    parses_or_reports("---\n" + text)
    parses_or_reports(f"---\n{text}\n---\nbody")


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=8), json_values, max_size=8), st.text())
def test_definition_parser_on_structured_but_weird_yaml(fields: dict[str, Any], body: str) -> None:
    parses_or_reports(definition_text(fields, body))


@FUZZ
@given(st.lists(st.sampled_from(YAML_SNIPPETS), min_size=1, max_size=5))
def test_definition_parser_on_broken_yaml(snippets: list[str]) -> None:
    parses_or_reports("---\n" + "\n".join(snippets) + "\n---\nbody")


# --- permission rules ----------------------------------------------------------------------------

TOOL_NAMES = ["Bash", "Read", "Edit", "Write", "Glob", "Grep", "WebFetch", "TodoWrite", "Task", "mcp__s", "mcp__s__t"]
SPECIFIER_CHARS = "ab/*.~:() \\!#[]{}?-_$'\"`;&|<>\n"
specifiers = st.text(alphabet=SPECIFIER_CHARS, max_size=20)


def with_specifier(tool: str, specifier: str) -> str:
    return f"{tool}({specifier})"


rule_texts = st.text(max_size=40) | st.builds(with_specifier, st.sampled_from(TOOL_NAMES), specifiers)


def parsed_or_none(text: str) -> str | None:
    try:
        return parse_rule(text).text
    except RuleError as exc:
        assert exc.message.strip()
        return None


@FUZZ
@given(rule_texts)
def test_rule_parser_returns_a_rule_or_a_rule_error(text: str) -> None:
    parsed_or_none(text)


def make_sandbox(root: Path, *, hard_link: bool) -> tuple[Path, Path]:
    work, outside = root / "work", root / "outside"
    (work / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{MARKER}\n", encoding="utf-8")
    (work / "a.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    (work / "sub" / "b.py").write_text("def f():\n    return 'beta'\n", encoding="utf-8")
    (work / "sub" / "deep" / ".hidden").write_text("gamma\n", encoding="utf-8")
    (work / "empty.txt").write_bytes(b"")
    (work / "bin.dat").write_bytes(b"\x00\x01\x02")
    (work / "link-out").symlink_to(outside, target_is_directory=True)
    (work / "secret-link.txt").symlink_to(outside / "secret.txt")
    if hard_link:
        os.link(outside / "secret.txt", work / "hard.txt")
    return work.resolve(), outside.resolve()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_sandbox(tmp_path_factory.mktemp("fuzz"), hard_link=True)


@pytest.fixture(scope="module")
def sandbox_for_grep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Without the hard link: Grep over a directory still reads hard-linked files (see test_sandbox_escapes)."""
    return make_sandbox(tmp_path_factory.mktemp("fuzz-grep"), hard_link=False)


arguments = st.dictionaries(st.sampled_from(["file_path", "path", "pattern", "command", "url", "x"]), json_values)
rule_lists = st.lists(rule_texts, max_size=4)


@FUZZ
@given(
    rule_lists,
    rule_lists,
    rule_lists,
    st.sampled_from(["default", "acceptEdits", "dontAsk", "bypassPermissions", "plan", "auto", "bogus"]),
    st.sampled_from([*TOOL_NAMES, "NotebookEdit", "Unknown"]),
    arguments,
    st.none() | st.dictionaries(st.sampled_from(["*", "Bash", "Read", "read", "mcp__*"]), json_values, max_size=3),
)
def test_decide_never_raises(
    sandbox: tuple[Path, Path],
    allow: list[str],
    ask: list[str],
    deny: list[str],
    mode: str,
    tool: str,
    args: dict[str, Any],
    agent_map: dict[str, Any] | None,
) -> None:
    keep = [text for text in (*allow, *ask, *deny) if parsed_or_none(text) is not None]
    rules = PermissionRules.of(
        allow=[t for t in allow if t in keep], ask=[t for t in ask if t in keep], deny=[t for t in deny if t in keep]
    )
    policy = PermissionPolicy(cwd=sandbox[0], mode=mode, rules=rules, agent_map=agent_map)
    verdict = decide(policy, tool, args)
    assert verdict.decision in ("allow", "ask", "deny")
    assert verdict.reason


SHELL_WORDS = ["echo", "git", "status", "rm", "-rf", "/", "a b", "x", "$(rm)", "`id`", "'q'", '"d"', "$HOME", "~"]
SHELL_GLUE = [" ", " ", " ", "&&", "||", ";", "|", "&", "\n", ">", ">>", "<", "2>&1", "(", ")", "{", "}", "\\", "#"]
commands = st.lists(st.sampled_from(SHELL_WORDS) | st.sampled_from(SHELL_GLUE), max_size=12).map("".join) | st.text(
    alphabet="ab $()`'\"\\;&|<>\n#{}~*", max_size=30
)


@FUZZ
@given(commands)
def test_an_allowed_command_has_only_allowed_parts(sandbox: tuple[Path, Path], command: str) -> None:
    rules = PermissionRules.of(allow=["Bash(echo *)", "Bash(git status)"], deny=["Bash(rm *)"])
    verdict = decide(PermissionPolicy(cwd=sandbox[0], rules=rules), "Bash", {"command": command})
    if verdict.decision != "allow":
        return
    for piece in split_command(command):
        assert piece.values[:1] in (("echo",), ()) or piece.text == "git status", (command, piece)
        assert not piece.substitution
        assert "rm" not in piece.values[:1]


READ_WORDS = ["ls", "cat", "grep", "-r", "find", "-exec", "-delete", "rm", "sed", "-i", "-n", "1p", "s/a/b/w x",
              "sort", "-o", "--out", "git", "branch", "-D", "log", "--output=x", "tee", "x", ".env", "/etc/passwd",
              "$X", "$(id)", "`id`", "{a,b}", "'q'", "PATH=/tmp", "LC_ALL=C", "jq", "env", "xargs", "sh", "-c",
              "cd", "..", "rg", "--pre", "tree", "uniq", "a", "b", "~", "~root", "*"]  # fmt: skip
READ_GLUE = [" ", " ", " ", " ", "|", "&&", ";", ">", ">>", "<", "<<<", "2>&1", "\n", "(", ")", "=", "'", '"']
read_commands = st.lists(st.sampled_from(READ_WORDS) | st.sampled_from(READ_GLUE), max_size=12).map("".join)
WRITERS = {"rm", "tee", "sh", "env", "xargs", "mv", "cp", "touch"}


@FUZZ
@given(read_commands)
def test_a_command_classified_read_only_never_holds_a_write_capable_construct(command: str) -> None:
    try:
        pieces = split_command(command)
    except ShellSyntaxError:
        return
    for piece in pieces:
        if read_only(piece) is None:
            continue
        values = piece.values
        assert not piece.substitution and not any(piece.dynamic), command
        assert not any(redirect.writes for redirect in piece.redirects), command
        assignments = list(itertools.takewhile(lambda value: "=" in value, values))
        # `PATH=/tmp ls` may run another ls; `ls PATH=/tmp` lists a file of that name
        assert not any(value.startswith("PATH=") for value in assignments), command
        program = next((value for value in values if "=" not in value), "")
        assert program not in WRITERS, command
        assert not (program == "sed" and "-i" in values), command
        assert not (program == "find" and {"-exec", "-delete"} & set(values)), command
        assert not (program == "sort" and {"-o", "--out"} & set(values)), command
        assert not (program == "git" and {"-D", "--output=x"} & set(values)), command
        assert not (program == "rg" and "--pre" in values), command


@FUZZ
@given(read_commands)
def test_without_rules_default_mode_allows_only_commands_whose_every_part_only_reads(
    sandbox: tuple[Path, Path], command: str
) -> None:
    verdict = decide(PermissionPolicy(cwd=sandbox[0]), "Bash", {"command": command})
    if verdict.decision != "allow":
        return
    for piece in split_command(command):
        assert read_only(piece) is not None, (command, piece)


# --- built-in tools ------------------------------------------------------------------------------

ARGUMENT_NAMES = sorted(
    {name for tool in builtin_tools().values() for name in tool.definition().input_schema.get("properties", {})}
)


@FUZZ
@given(
    st.sampled_from(sorted(builtin_tools())),
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES) | st.text(max_size=8), json_values, max_size=6),
)
def test_tool_argument_validation_returns_input_or_a_tool_error(name: str, args: dict[str, Any]) -> None:
    tool = builtin_tools()[name]
    try:
        tool.validate(args)
    except ToolError as exc:
        assert exc.message.strip()
        assert name in exc.message


path_parts = st.sampled_from(
    ["", ".", "..", "sub", "deep", "a.txt", "b.py", ".hidden", "link-out", "secret-link.txt", "hard.txt", "bin.dat",
     "empty.txt", "nope", "~", "outside", "secret.txt", "*", "**"]
)  # fmt: skip
relative_paths = st.lists(path_parts, min_size=1, max_size=4).map("/".join)


def sandbox_paths(sandbox: tuple[Path, Path]) -> st.SearchStrategy[str]:
    work, outside = sandbox
    anchors = st.sampled_from(["", f"{work}/", f"{outside}/", "/", "~/", f"{work.parent}/"])
    return st.builds(str.__add__, anchors, relative_paths)


def run_sandboxed(sandbox: tuple[Path, Path], name: str, args: dict[str, Any]) -> None:
    work, _ = sandbox
    ctx = ToolContext(cwd=work, allowed_roots=(work,), env=sanitized_environment(os.environ))
    tool = builtin_tools()[name]

    async def go() -> str:
        return await tool.run(ctx, tool.validate(args))

    try:
        text = anyio.run(go)
    except ToolError as exc:
        text = exc.message
        assert text.strip()
    assert isinstance(text, str)
    assert MARKER not in text, (name, args)


@FUZZ
@given(st.data())
def test_read_stays_inside_the_sandbox(sandbox: tuple[Path, Path], data: st.DataObject) -> None:
    args: dict[str, Any] = {"file_path": data.draw(sandbox_paths(sandbox))}
    args |= data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "offset": st.integers(0, 10),
                "limit": st.integers(1, 5),
                "allow_large": st.booleans(),
            },
        )
    )
    run_sandboxed(sandbox, "Read", args)


glob_patterns = st.lists(path_parts | st.sampled_from(["*.py", "{a,b}*", "[ab]*", "?"]), min_size=1, max_size=3).map(
    "/".join
)


@FUZZ
@given(st.data())
def test_glob_stays_inside_the_sandbox(sandbox: tuple[Path, Path], data: st.DataObject) -> None:
    args: dict[str, Any] = {"pattern": data.draw(glob_patterns)}
    if data.draw(st.booleans()):
        args["path"] = data.draw(sandbox_paths(sandbox))
    run_sandboxed(sandbox, "Glob", args)


@FUZZ
@given(st.data())
def test_grep_stays_inside_the_sandbox(sandbox_for_grep: tuple[Path, Path], data: st.DataObject) -> None:
    sandbox = sandbox_for_grep
    args: dict[str, Any] = {"pattern": data.draw(st.sampled_from(["FUZZ", "a", ".", "(", "beta|gamma", "\\w+", ""]))}
    if data.draw(st.booleans()):
        args["path"] = data.draw(sandbox_paths(sandbox))
    args |= data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "output_mode": st.sampled_from(["content", "files_with_matches", "count"]),
                "glob": st.sampled_from(["*.txt", "**/*", "../*", "*.{py,txt}"]),
                "-i": st.booleans(),
                "-C": st.integers(0, 3),
                "head_limit": st.integers(0, 3),
                "offset": st.integers(0, 3),
                "multiline": st.booleans(),
            },
        )
    )
    run_sandboxed(sandbox, "Grep", args)
