"""How Glob matches paths fast, with the rules of wcmatch's glob (`glob_flags`) that it always had.

First rg lists only the files whose name the pattern can possibly match. rg's own `--glob` is not usable for that:
it has other rules for `*`, `**` and dot files, and a file it matches is listed even when .gitignore ignores it. A
file *type* (`--type-add`) is different: rg checks it on the file name only and after the ignore files, so a type
whose globs accept every name the pattern could match lists a superset of the matches that still respects
.gitignore. Then `PathMatcher` decides exactly, judging each directory once.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wcmatch.glob import WcMatcher

from ..core.glob_root import glob_flags

TYPE_NAME = "mcpsubagentsglob"
MAX_ALTERNATIVES = 64
"""Patterns that expand to more brace alternatives than this are matched without a filter."""

# Outside this set a character may mean something to wcmatch or to rg's globs (or to `--type-add`'s `name:glob`).
_SAFE_PUNCTUATION = frozenset(".-_+=@#%&~ ")


def ripgrep_name_filter(pattern: str) -> list[str]:
    """rg options that list only files whose name the glob `pattern` (relative, braces allowed) can match; empty
    when no such filter is known, so every file is listed."""
    names = _filter_globs(pattern)
    if not names:
        return []
    options: list[str] = []
    for name in sorted(names):
        options += ["--type-add", f"{TYPE_NAME}:{name}"]
    return [*options, "--type", TYPE_NAME]


def may_match_hidden(pattern: str) -> bool:
    """Whether `pattern` (relative, braces allowed) can match a path in which a name starts with a dot. It cannot
    when no path segment of any brace alternative starts with a dot (or an escape, or a bracket, to be safe): a
    wildcard, a `?`, a bracket and `**` never match a leading dot. rg then need not list hidden files at all."""
    if os.name == "nt":
        return True  # there rg also hides files by their hidden attribute, which wcmatch does not know
    alternatives = _alternatives(pattern)
    if alternatives is None:
        return True
    return any(segment[:1] in _MAY_START_A_DOT for alternative in alternatives for segment in alternative.split("/"))


_MAY_START_A_DOT = frozenset(".\\[")


def listing_matcher(pattern: str) -> Callable[[list[str]], list[str]]:
    """Keeps, of the paths rg lists with `ripgrep_name_filter(pattern)`, those that match `pattern`.

    When every brace alternative is `**/` and a name the filter checks exactly (`**/*.py`, `**/index.ts`), the
    filter has already judged the name and only the dot rules remain: `**` enters no directory whose name starts
    with a dot, and a wildcard matches no name starting with one unless the pattern spells that dot. `**/*` is
    those dot rules alone. Else `PathMatcher` judges every path."""
    if os.name != "nt" and set(_alternatives(pattern) or ()) == {"**/*"}:
        return _without_dotted_names  # every file: the costliest listing, where matching each path showed most
    alternatives = _alternatives(pattern) if _filter_globs(pattern) else None
    if not alternatives or not all(_is_exact_name_filter(alternative) for alternative in alternatives):
        return _each(PathMatcher(pattern).match)
    dotted_names = any(alternative.startswith("**/.") for alternative in alternatives)
    if not dotted_names:
        return _without_dotted_names
    if not all(alternative.startswith("**/.") for alternative in alternatives):
        return _each(PathMatcher(pattern).match)  # some names may start with a dot and some not: wcmatch decides
    return _each(_only_the_name_dotted)


def _without_dotted_names(paths: list[str]) -> list[str]:
    return [path for path in paths if not path.startswith(".") and "/." not in path]


def _only_the_name_dotted(path: str) -> bool:
    directory, _, name = path.rpartition("/")
    if directory and (directory.startswith(".") or "/." in directory):
        return False
    return name.startswith(".")


def _each(match: Callable[[str], bool]) -> Callable[[list[str]], list[str]]:
    def keep(paths: list[str]) -> list[str]:
        return list(filter(match, paths))

    return keep


def _is_exact_name_filter(alternative: str) -> bool:
    """`**/NAME` where NAME's filter glob accepts exactly the names NAME matches, dot rules aside."""
    if not alternative.startswith("**/"):
        return False
    name = alternative[3:]
    return "/" not in name and name.count("*") <= 1 and _name_glob(name) == name


def _filter_globs(pattern: str) -> set[str] | None:
    if os.name == "nt" or not _case_sensitive():
        return None  # rg's type globs are case-sensitive; wcmatch would not be
    return _name_globs(pattern)


def _name_globs(pattern: str) -> set[str] | None:
    """One rg glob per brace alternative that every file name the alternative matches also matches; None when an
    alternative can match any name."""
    alternatives = _alternatives(pattern)
    if alternatives is None:
        return None
    globs: set[str] = set()
    for alternative in alternatives:
        name_glob = _name_glob(alternative.rsplit("/", 1)[-1])
        if name_glob is None:
            return None
        globs.add(name_glob)
    return globs or None


def _name_glob(segment: str) -> str | None:
    """`src*.test.ts` -> `src*.test.ts`; `*.py` -> `*.py`; `index.ts` -> `index.ts`: the safe literal start and end
    of the last path segment around one `*`, or None when neither is there."""
    prefix = _safe_run(segment)
    if prefix == segment:
        return segment or None
    suffix = _safe_run(segment[::-1])[::-1]
    if not prefix and not suffix:
        return None
    return f"{prefix}*{suffix}"


def _safe_run(text: str) -> str:
    for index, char in enumerate(text):
        if not (char.isalnum() or char in _SAFE_PUNCTUATION):
            return text[:index]
    return text


def _case_sensitive() -> bool:
    from wcmatch import util

    return util.is_case_sensitive()


@functools.lru_cache(maxsize=64)
def _alternatives(pattern: str) -> tuple[str, ...] | None:
    """The pattern's brace alternatives, as wcmatch expands them; None when there are too many. (Glob asks up to
    five times per call.)"""
    import bracex  # imported on first use, like wcmatch

    try:
        return tuple(bracex.expand(pattern, keep_escapes=True, limit=MAX_ALTERNATIVES))
    except bracex.ExpansionLimitException:
        return None


_ANY_NAME = "x"
"""Stands for the file name when only a path's directory is matched."""


class PathMatcher:
    """wcmatch's glob match of relative paths, sped up: with the pattern split into its brace alternatives, and each
    of those into a directory part and a file name part, a directory is matched once for all the files in it and a
    file name by one regular expression. Patterns that do not split that simply are matched whole by wcmatch."""

    def __init__(self, pattern: str) -> None:
        from wcmatch import glob as wcglob

        self._whole: WcMatcher[str] = wcglob.compile(pattern, flags=glob_flags())
        self._parts = _split(pattern)
        self._directories: dict[str, tuple[re.Pattern[str], ...]] = {}

    def match(self, path: str) -> bool:
        if self._parts is None:
            return self._whole.match(path)
        directory, _, name = path.rpartition("/")
        name_patterns = self._directories.get(directory)
        if name_patterns is None:
            name_patterns = self._directories[directory] = tuple(
                name_pattern
                for directory_matcher, name_pattern in self._parts
                if _directory_matches(directory_matcher, directory)
            )
        for name_pattern in name_patterns:
            if name_pattern.match(name):
                return True
        return False


_Part = tuple["WcMatcher[str] | None", re.Pattern[str]]


def _split(pattern: str) -> list[_Part] | None:
    from wcmatch import glob as wcglob

    alternatives = _alternatives(pattern)
    if not alternatives:
        return None
    parts: list[_Part] = []
    for alternative in alternatives:
        directory, slash, name = alternative.rpartition("/")
        if not name or "**" in name or "\\" in alternative or "/" in alternative.partition("[")[2]:
            return None  # a globstar last, an escape or a bracket across a slash: left to wcmatch whole
        include, exclude = wcglob.translate(name, flags=glob_flags())
        if len(include) != 1 or exclude:
            return None
        directory_matcher = wcglob.compile(f"{directory}/{_ANY_NAME}", flags=glob_flags()) if slash else None
        parts.append((directory_matcher, re.compile(include[0])))
    return parts


def _directory_matches(matcher: WcMatcher[str] | None, directory: str) -> bool:
    if matcher is None:
        return not directory
    return matcher.match(f"{directory}/{_ANY_NAME}" if directory else _ANY_NAME)
