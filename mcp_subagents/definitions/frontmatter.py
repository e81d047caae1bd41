"""Split a Markdown file into YAML frontmatter and body, and read the YAML, forgiving unquoted `: ` in values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DefinitionError
from ..core.json_values import JsonObject
from ._coerce import as_object
from .plain_yaml import plain_mapping

_FENCE = re.compile(r"---[ \t]*")
_TOP_LEVEL_SCALAR = re.compile(r"([A-Za-z_][\w-]*):[ \t]+(\S.*?)[ \t]*")
_BLOCK_SCALAR = re.compile(r"[|>][+-]?\d*")
_FLOW_START = ("[", "{")
_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
"""Characters that make Claude Code quote a plain value before its second parse (its own rule, kept as is)."""
_AWKWARD_START = tuple(",?")
_LEADING_TABS = re.compile(r"^\t+", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontmatter:
    fields: JsonObject
    body: str
    yaml_repaired: str | None = None
    """The YAML error the strict parse gave, when the fields only loaded after quoting plain values."""


def read_frontmatter(text: str, path: Path | None = None) -> Frontmatter:
    """Split `text` at its `---` fences and parse the YAML between them into a mapping.

    A UTF-8 BOM, CRLF line ends and blank lines before the first fence are tolerated.

    Raises:
        DefinitionError: no frontmatter, no closing fence, YAML that does not parse, or YAML that is not a mapping.
    """
    # Offsets into the text rather than a list of its lines: splitting whole files (bodies of many kilobytes) into
    # lines and joining them again was a fifth of parsing a file.
    text = text.removeprefix("\ufeff")
    if "\r" in text:  # far quicker than replace() on the many files that have none
        text = text.replace("\r\n", "\n")
    opening = _first_content_line(text)
    if opening is None or not _FENCE.fullmatch(text, opening[1], opening[2]):
        raise DefinitionError("no YAML frontmatter (the file must start with a '---' line)", path)
    line, _, fence_end = opening
    closing = _closing_fence(text, fence_end)
    if closing is None:
        raise DefinitionError("frontmatter has no closing '---' line", path)
    yaml_text = text[fence_end + 1 : closing[0] - 1]
    body = text[closing[1] + 1 :].strip()
    fields, repaired = _load_yaml(yaml_text, first_line=line + 2, path=path)
    return Frontmatter(fields=fields, body=body, yaml_repaired=repaired)


def _first_content_line(text: str) -> tuple[int, int, int] | None:
    """(line number from 0, start offset, end offset) of the first line that is not blank; None when none is."""
    start, number = 0, 0
    while True:
        end = text.find("\n", start)
        if end == -1:
            end = len(text)
        if text[start:end].strip():
            return number, start, end
        if end == len(text):
            return None
        start, number = end + 1, number + 1


def _closing_fence(text: str, after: int) -> tuple[int, int] | None:
    """(start, end offset) of the first `---` line after the line ending at `after`."""
    newline = after
    while (newline := text.find("\n---", newline)) != -1:
        end = text.find("\n", newline + 1)
        if end == -1:
            end = len(text)
        if _FENCE.fullmatch(text, newline + 1, end):
            return newline + 1, end
        newline = end
    return None


def _load_yaml(yaml_text: str, *, first_line: int, path: Path | None) -> tuple[JsonObject, str | None]:
    plain = plain_mapping(yaml_text)
    if plain is not None:
        return plain, None
    import yaml  # Deferred: PyYAML takes 10-20 ms to import and only loading needs it.

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    repaired: str | None = None
    try:
        data = yaml.load(yaml_text, Loader=loader)
    except yaml.YAMLError as exc:
        # Many files in the wild carry one-line descriptions such as `description: Use when... Examples: user: "..."`,
        # which strict YAML rejects. Like Claude Code, retry with such values quoted (and tab indents made spaces);
        # the validator still warns.
        try:
            data = yaml.load(_quote_plain_values(_LEADING_TABS.sub(_spaces, yaml_text)), Loader=loader)
        except yaml.YAMLError:
            raise DefinitionError(_describe_yaml_error(exc, first_line), path) from exc
        repaired = _describe_yaml_error(exc, first_line)
    if data is None:
        return {}, repaired
    fields = as_object(data)
    if fields is None:
        raise DefinitionError(f"frontmatter must be a YAML mapping, not {type(data).__name__}", path)
    return fields, repaired


def _describe_yaml_error(exc: Exception, first_line: int) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    line = getattr(mark, "line", None)
    column = getattr(mark, "column", None)
    if isinstance(line, int) and isinstance(column, int):
        return f"invalid YAML frontmatter at line {line + first_line}, column {column + 1}: {problem}"
    return f"invalid YAML frontmatter: {problem}"


def _spaces(match: re.Match[str]) -> str:
    return "  " * len(match.group(0))


def _quote_plain_values(yaml_text: str) -> str:
    """Double-quote top-level plain values that YAML rejects (`: ` inside, `*`, `@` or `[` first, ...).

    Quoted values, block scalars (`|`, `>`) and flow collections that parse (`[Read, Grep]`) are left alone; an
    unbalanced `[Read` becomes the text "[Read", as Claude Code reads it. A plain value continued on indented lines
    is folded into the one quoted line, as YAML would fold it.
    """
    lines = yaml_text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        end = i + 1
        match = _TOP_LEVEL_SCALAR.fullmatch(lines[i])
        if match is not None and not _keeps_its_form(match.group(2)):
            while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
                end += 1
            value = " ".join([match.group(2), *(line.strip() for line in lines[i + 1 : end])])
            if _needs_quotes(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                out.append(f'{match.group(1)}: "{escaped}"')
                i = end
                continue
        out.extend(lines[i:end])
        i = end
    return "\n".join(out)


def _keeps_its_form(value: str) -> bool:
    """Quoted text, a block scalar indicator, or a flow collection that parses on its own."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return True
    if _BLOCK_SCALAR.fullmatch(value):
        return True
    if value.startswith(_FLOW_START):
        import yaml

        try:
            return isinstance(yaml.safe_load(value), list | dict)
        except yaml.YAMLError:
            return False
    return False


def _needs_quotes(value: str) -> bool:
    return _SPECIAL.search(value) is not None or value.endswith(":") or value.startswith(_AWKWARD_START)


def has_frontmatter(text: str) -> bool:
    """Whether the first non-blank line is a `---` fence. Reads only up to that line: every file of an agents
    folder is asked this before it is parsed."""
    text = text.removeprefix("\ufeff")
    opening = _first_content_line(text)
    return opening is not None and _FENCE.fullmatch(text[opening[1] : opening[2]].rstrip("\r")) is not None
