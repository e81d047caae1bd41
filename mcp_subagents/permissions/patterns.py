"""The three kinds of rule content: gitignore-style path patterns, command patterns and web domains."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pathspec
    from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

Anchor: TypeAlias = Literal["root", "home", "project", "cwd"]

# A name no real pattern targets on purpose: a pattern that matches it (and a file below it) matches everything.
_PROBE = "\uffff"
_HOST = re.compile(r"\*|(\*\.)?[\w\-]+(\.[\w\-]+)*|[0-9a-f:.]*:[0-9a-f:.]*:[0-9a-f:.]*")
"""A host name, `*.` and a host name, `*`, or an IPv6 address (brackets removed)."""


class PatternError(ValueError):
    """A pattern that cannot be compiled; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Bases:
    """The directories path patterns are anchored to."""

    cwd: Path
    project: Path
    home: Path

    def candidates(self, anchor: Anchor) -> tuple[str, ...]:
        """The anchor directory as written and with symlinks resolved."""
        if anchor == "root":
            return ("/",)
        base = {"home": self.home, "project": self.project, "cwd": self.cwd}[anchor]
        written = os.path.normpath(os.path.abspath(base))
        return tuple(dict.fromkeys((written, real_path(written))))


def real_path(path: str) -> str:
    """`os.path.realpath`, or the path unchanged when it cannot be resolved."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A gitignore-style pattern, anchored to a directory chosen by its prefix.

    `//abs/path` is absolute, `~/path` is under the home directory, `/path` is under the project root, and
    `./path` or `path` is under the working directory. Like .gitignore, a pattern without an inner `/` (such as
    `*.env`) matches at any depth, `*` stays within one directory, `**` crosses directories, and a pattern that
    names a directory covers everything in it.
    """

    source: str
    anchor: Anchor
    pattern: str
    spec: pathspec.PathSpec[GitIgnoreBasicPattern] = field(compare=False, repr=False)

    def matches(self, path: str, bases: Bases, *, directory: bool = False) -> bool:
        """Whether the absolute, normalized `path` matches; a directory matches when the pattern covers it whole."""
        for base in bases.candidates(self.anchor):
            relative = _relative(path, base)
            if relative is None:
                continue
            if relative == "":
                if self.spec.match_file(_PROBE) and self.spec.match_file(f"{_PROBE}/{_PROBE}"):
                    return True
            elif self.spec.match_file(relative) or (directory and self.spec.match_file(relative + "/")):
                return True
        return False


def compile_path_pattern(source: str) -> PathPattern:
    """Compile a path specifier as written in `Read(...)` or `Edit(...)`.

    Raises:
        PatternError: negation (`!`), a trailing backslash, or another pattern gitignore rejects.
    """
    text = source.strip()
    anchor: Anchor
    if text.startswith("//"):
        anchor, pattern = "root", "/" + text[2:].lstrip("/")
    elif text == "~" or text.startswith("~/"):
        anchor, pattern = "home", "/" + text[2:]
    elif text.startswith("/"):
        anchor, pattern = "project", text
    elif text in (".", "./"):
        anchor, pattern = "cwd", "/"
    elif text.startswith("./"):
        anchor, pattern = "cwd", "/" + text[2:]
    else:
        anchor, pattern = "cwd", text
    if pattern.startswith("!") or text.startswith("!"):
        raise PatternError("negated patterns ('!') are not supported; put the path in another list instead")
    if text.startswith("#"):
        raise PatternError("a path pattern cannot start with '#'")
    import pathspec  # on first use: the sandbox needs this module's command patterns at start-up, not pathspec
    from pathspec.patterns.gitignore import GitIgnorePatternError

    try:
        with warnings.catch_warnings():
            # Python warns about character classes such as `[[a]` that a future version may read differently.
            warnings.simplefilter("ignore", FutureWarning)
            spec = pathspec.PathSpec.from_lines("gitignore", [pattern])
    except (GitIgnorePatternError, ValueError, re.error) as exc:
        raise PatternError(f"not a valid gitignore-style pattern: {exc}") from None
    return PathPattern(source=source, anchor=anchor, pattern=pattern, spec=spec)


def _relative(path: str, base: str) -> str | None:
    if base == "/":
        return path[1:] if path.startswith("/") else None
    if path == base:
        return ""
    if path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return None


@dataclass(frozen=True, slots=True)
class CommandPattern:
    """A Bash command pattern: exact text, `*` wildcards, or a legacy `prefix:*`.

    `*` matches any characters (spaces included) and `\\*` a literal star. A pattern ending in ` *` with no
    other wildcard, and every legacy `prefix:*`, also match the bare prefix: `git diff *` matches `git diff`
    and `git diff HEAD`, but not `git difftool`.
    """

    source: str
    alternatives: tuple[tuple[str, ...], ...]
    """Each alternative is the literal text between wildcards; one item means no wildcard."""

    @property
    def exact(self) -> bool:
        return all(len(segments) == 1 for segments in self.alternatives)

    def matches(self, command: str) -> bool:
        return any(_wildcard_match(segments, command) for segments in self.alternatives)


def compile_command_pattern(source: str) -> CommandPattern:
    text = " ".join(source.split())
    legacy = text.endswith(":*") and not text.endswith("\\:*")
    if legacy:
        text = text[:-2].rstrip() + " *"
    segments: list[str] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text.startswith("*", index + 1):
            literal.append("*")
            index += 2
            continue
        if char == "*":
            segments.append("".join(literal))
            literal = []
        else:
            literal.append(char)
        index += 1
    segments.append("".join(literal))
    wildcards = len(segments) - 1
    alternatives = [tuple(segments)]
    if (legacy or wildcards == 1) and wildcards and segments[-1] == "" and segments[-2].endswith(" "):
        alternatives.append((*segments[:-2], segments[-2][:-1]))
    return CommandPattern(source=source, alternatives=tuple(alternatives))


def _wildcard_match(segments: tuple[str, ...], text: str) -> bool:
    """Whether `text` is the segments joined by any strings. Greedy and linear: no regex backtracking to exploit."""
    if len(segments) == 1:
        return text == segments[0]
    first, last = segments[0], segments[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for middle in segments[1:-1]:
        found = text.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


@dataclass(frozen=True, slots=True)
class DomainPattern:
    """`domain:HOST` of a WebFetch rule: that host exactly (any port and scheme), `*.HOST` for its subdomains,
    or `*` for every host."""

    host: str

    def matches(self, url: str) -> bool:
        host = url_host(url)
        return host is not None and host_matches(self.host, host)


def host_matches(pattern: str, host: str) -> bool:
    """Whether `host` is the one `pattern` names: `*` is every host, `*.example.com` its subdomains (not itself)."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def compile_domain_pattern(source: str) -> DomainPattern:
    """Raises:
    PatternError: the text is not `domain:HOST`.
    """
    text = source.strip()
    if not text.startswith("domain:"):
        raise PatternError('WebFetch rules take a domain: write "WebFetch(domain:example.com)"')
    host = text.removeprefix("domain:").strip().lower().rstrip(".").removeprefix("[").removesuffix("]")
    if not _HOST.fullmatch(host):
        raise PatternError(f"'{host}' is not a host name (write the host only, without scheme, path or port)")
    return DomainPattern(host=host)


def url_host(url: str) -> str | None:
    """The lowercased host of a URL, or None when it has none or cannot be parsed."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None
