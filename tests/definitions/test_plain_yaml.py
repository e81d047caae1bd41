"""The frontmatter read without PyYAML must be exactly what PyYAML reads, or be left to PyYAML: on every file of the
corpus, on cases chosen to trip it, and on generated ones. Splitting a file at its fences must not have changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_subagents.core.errors import DefinitionError
from mcp_subagents.definitions._coerce import as_object
from mcp_subagents.definitions.frontmatter import read_frontmatter
from mcp_subagents.definitions.plain_yaml import plain_mapping
from tests.support import CHECKOUT, SHARED, require_shared

LOADERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])]


def yaml_reads(text: str) -> list[str]:
    """What each of PyYAML's safe loaders gives for `text` (as its repr, so True is not 1), or that it fails."""
    found: list[str] = []
    for loader in LOADERS:
        try:
            data: Any = yaml.load(text, Loader=loader)
        except yaml.YAMLError:
            found.append("error")
            continue
        found.append(repr({} if data is None else as_object(data)))
    return found


def assert_same_as_yaml(text: str) -> None:
    fast = plain_mapping(text)
    if fast is not None:
        assert yaml_reads(text) == [repr(fast)] * len(LOADERS), text


def frontmatter_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    return text.split("\n---", 1)[0].partition("\n")[2]


def test_every_agent_file_of_the_corpus_reads_as_pyyaml_reads_it() -> None:
    require_shared(SHARED / "corpus", "agent corpus")
    files = sorted((SHARED / "corpus").rglob("*.md")) + sorted((CHECKOUT / "agents").glob("*.md"))
    texts = [frontmatter_text(path) for path in files if path.read_text(encoding="utf-8").startswith("---")]
    for text in texts:
        assert_same_as_yaml(text)
    fast = [text for text in texts if plain_mapping(text) is not None]
    assert len(fast) >= 0.9 * len(texts)  # the point of it: nearly every real file needs no PyYAML


READ_WITHOUT_YAML = {
    "name: a\ndescription: Use it when x\nmodel: sonnet": {
        "name": "a",
        "description": "Use it when x",
        "model": "sonnet",
    },
    "empty:\nspaces:   \nafter: x   ": {"empty": None, "spaces": None, "after": "x"},
    "a: yes\nb: No\nc: TRUE\nd: off\ne: null\nf: Null\ng: tRue\nh: y": {
        "a": True,
        "b": False,
        "c": True,
        "d": False,
        "e": None,
        "f": None,
        "g": "tRue",
        "h": "y",
    },
    "url: see http://x.y/z?q=1#top": {"url": "see http://x.y/z?q=1#top"},
    "d: a:b, c [d] {e} *f &g !h |i >j %k @l `m 'n' \"o\"": {"d": "a:b, c [d] {e} *f &g !h |i >j %k @l `m 'n' \"o\""},
    "d: x\nd: y": {"d": "y"},
    "d: Unïcödé 🙂 text\u00a0": {"d": "Unïcödé 🙂 text\u00a0"},
    "d: a \\n b": {"d": "a \\n b"},
    "\n\nname: a\n\n": {"name": "a"},
    "": {},
    'd: "Use when: x #1, y"': {"d": "Use when: x #1, y"},
    'd: ""': {"d": ""},
    "d: 'a \"b\" \\ c'": {"d": 'a "b" \\ c'},
    "t: []\nu: [ ]\nv: [Read, Grep , Bash(git add *)]\nw: [yes, null, x]": {
        "t": [],
        "u": [],
        "v": ["Read", "Grep", "Bash(git add *)"],
        "w": [True, None, "x"],
    },
    "d: >\n  one\n  two\nm: x": {"d": "one two\n", "m": "x"},
    "d: >-\n    one\n    two": {"d": "one two"},
    "d: |\n  one\n  # two: three\nm: x": {"d": "one\n# two: three\n", "m": "x"},
    "d: |-\n  one\n  two\nm: x": {"d": "one\ntwo", "m": "x"},
    "d: >\n  last field": {"d": "last field"},
}


@pytest.mark.parametrize("text", READ_WITHOUT_YAML)
def test_plain_frontmatter_is_read_without_yaml_as_yaml_reads_it(text: str) -> None:
    assert plain_mapping(text) == READ_WITHOUT_YAML[text]
    assert yaml_reads(text) == [repr(READ_WITHOUT_YAML[text])] * len(LOADERS)


LEFT_TO_YAML = [
    "description: Use when x. Examples: user: y",  # `: ` inside: strict YAML fails, the repair quotes it
    "d: text # a comment",
    "d: ends with a colon:",
    "d: 12",
    "d: 1.5",
    "d: 2024-01-01",
    "d: ~",
    "d: -x",
    "d: .inf",
    "d: ?x",
    "d: *alias",
    "d: &anchor x",
    "d: !tag x",
    "d: @x",
    "d: `x`",
    "d: %x",
    "d: é",
    "on: x",
    "yes: x",
    "Null: x",
    "1: x",
    "a key: x",
    "k:x",
    "k : x",
    "d: first\n  continued",
    "tools:\n  - Read",
    "tools:\n- Read",
    "d: x\n# comment",
    "d: a\tb",
    "d:\tx",
    "d: a\rb",
    "d: a\x85b",
    "d: a\u2028b",
    "d: a\ufeffb",
    "d: a\x07b",
    'd: "a \\" b"',
    'd: "a\\nb"',
    "d: 'it''s'",
    'd: "a" b',
    "d: 'open",
    "t: [a, b,]",
    "t: [a?]",
    "t: [a, [b]]",
    "t: [a: b]",
    "t: [a, 'b']",
    "t: [1, 2]",
    "t: [a] # c",
    "t: {a: b}",
    "d: >\n  one\n\n  two",
    "d: >\n  one\n   more indented",
    "d: >\n    one\n  less",
    "d: >\n  trailing space \n  x",
    "d: >\n  x\n\nm: y",
    "d: >\nm: y",
    "d: >+\n  x",
    "d: >2\n  x",
    "d: | # c\n  x",
    "...",
    "- a",
    "  indented: x",
]


@pytest.mark.parametrize("text", LEFT_TO_YAML)
def test_anything_else_is_left_to_yaml(text: str) -> None:
    assert plain_mapping(text) is None


_TAIL_ATOMS = [
    *"ab -#'\"[]{},|>!&*%@`?~.=<\\/_:()",
    "é",
    "🙂",
    "1",
    " yes",
    "\u00a0",
    "''",
    "\\n",
    "\t",
    "\r",
    "\u2028",
]
_tail = st.lists(st.sampled_from(_TAIL_ATOMS), max_size=6).map("".join)
_plain = st.tuples(st.sampled_from(["a", "Z", "yes", "No", "null", "on", "y", "tRue", "Read", "1", "é"]), _tail).map(
    "".join
)
_word = st.sampled_from(["yes", "No", "null", "Off", "TRUE", "y", "~", "Read", "Bash(git *)", "a b", "a-b", "1", ""])
_quoted = st.tuples(st.sampled_from(["'", '"']), _tail, st.sampled_from(["'", '"'])).map("".join)
_flow_item = st.tuples(st.sampled_from(["", " "]), _word | _plain, st.sampled_from(["", " "])).map("".join)
_flow = st.lists(_flow_item, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
_block = st.tuples(
    st.sampled_from([">", ">-", "|", "|-", ">+"]),
    st.integers(min_value=1, max_value=3),
    st.lists(_plain | _tail, min_size=1, max_size=3),
    st.sampled_from(["", "", "\n", "\n ", "\n    more"]),
).map(lambda parts: parts[0] + "".join("\n" + " " * parts[1] + line for line in parts[2]) + parts[3])
_key = st.sampled_from(["name", "description", "tools", "_x", "a-b", "model", "on", "Null", "y", "1"])
_value = _plain | _word | _quoted | _flow | _block
_line = st.tuples(_key, st.sampled_from([": ", ":  ", ":", " : "]), _value, st.sampled_from(["", " ", " #c"]))
_document = st.lists(_line.map("".join) | st.sampled_from(["", " ", "  x: y", "# c", "- a"]), max_size=5).map("\n".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a busy machine is no failure
@given(_document)
def test_generated_frontmatter_reads_as_yaml_reads_it_or_is_left_to_yaml(text: str) -> None:
    assert_same_as_yaml(text)


SPLITS: dict[str, tuple[dict[str, Any] | str, str]] = {
    "---\nname: a\n---\nBody.\n": ({"name": "a"}, "Body."),
    "\ufeff\r\n  \n---  \r\nname: a\r\n---\t\r\n\r\nLine one.\r\nLine two.\r\n": (
        {"name": "a"},
        "Line one.\nLine two.",
    ),
    "---\n---\n": ({}, ""),
    "---\nname: a\n---": ({"name": "a"}, ""),
    "---\nname: a\n---\nB\n----\n---\nC": ({"name": "a"}, "B\n----\n---\nC"),
    "---\nname: a\n----\nname: b\n---\n": ("error", ""),
    "---\nname: a\n --- \n---\nbody": ({"name": "a ---"}, "body"),
    "---\nd: a\rb\n---\nx\r": ("error", ""),
}


@pytest.mark.parametrize("text", SPLITS)
def test_files_are_split_at_their_fences(text: str) -> None:
    fields, body = SPLITS[text]
    try:
        frontmatter = read_frontmatter(text)
    except DefinitionError:
        assert fields == "error"
        return
    assert (frontmatter.fields, frontmatter.body) == (fields, body)


@pytest.mark.parametrize("text", ["", "\n \n", "no fence\n---\n", "---\nname: a\n", "---"])
def test_a_file_without_both_fences_is_refused(text: str) -> None:
    with pytest.raises(DefinitionError):
        read_frontmatter(text)
