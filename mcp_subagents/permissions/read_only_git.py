"""Which git commands only read: the subcommands that list and show, without the options that run a program (a pager,
an external diff, a text conversion or a filter driver), write a file, or read files or repositories the command line
does not name. Where git finds its repository is the caller's to check (`Reads.repository_from`)."""

from __future__ import annotations

import os
import re

from .reads import Reads
from .reads import option_set as _set

_GIT_GLOBAL_FLAGS = _set("--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
                         "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--paginate",
                         "-p")  # fmt: skip
"""Options before the subcommand that change nothing it runs or reads. Everything else there (`-c`, `--config-env`,
`--exec-path`, `--git-dir`, `--work-tree`, `--namespace`, `--super-prefix`, `--bare`, ...) is not read-only."""
_GIT_UNSAFE_LONG = _set("--output", "--ext-diff", "--textconv", "--open-files-in-pager", "--no-index", "--orderfile",
                        "--recurse-submodules", "--submodule", "--contents", "--ignore-revs-file", "--exclude-from",
                        "--filters", "--file", "--blob", "--includes", "--exec", "--upload-pack", "--receive-pack",
                        "--edit")  # fmt: skip
"""Subcommand options that write a file, run a program (a pager, an external diff, a text conversion or a filter
driver), look into another repository (submodules) or read files the command line does not name. Git accepts
abbreviations, so any start of one of these counts."""
_GIT_SAFE_LONG = _set("--exclude", "--text", "--filter", "--ignore-rev", "--no-textconv", "--no-ext-diff")
"""Options that are the start of an unsafe one but, written in full, are themselves."""
_GIT_UNSAFE_SHORT = {
    "grep": "Of",  # -O runs a pager on the matching files; -f reads patterns from any file
    "blame": "S",  # -S reads revisions from any file
    "annotate": "S",
    "ls-files": "X",  # -X reads exclude patterns from any file
    "config": "fe",  # -f reads another config file; -e edits
}
"""Short options per subcommand that do the same; `-O` (a pager for grep, an order file for the diff family) is
unsafe everywhere."""
_GIT_READERS = _set("status", "log", "show", "diff", "shortlog", "blame", "annotate", "grep", "rev-parse",
                    "rev-list", "describe", "ls-files", "ls-tree", "cat-file", "for-each-ref", "show-ref",
                    "merge-base", "name-rev", "count-objects", "version", "diff-tree", "diff-files", "diff-index",
                    "check-ignore", "check-attr", "whatchanged", "show-branch", "cherry")  # fmt: skip
_GIT_LISTERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # subcommand: (options allowed, options that allow operands as patterns)
    "branch": (
        _set("-a", "-r", "-v", "-vv", "--all", "--remotes", "--verbose", "-l", "--list", "--show-current",
             "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format",
             "--color", "--no-color", "--column", "--no-column", "-i", "--ignore-case", "--abbrev", "--no-abbrev"),
        _set("-l", "--list", "--merged", "--no-merged", "--contains", "--no-contains", "--points-at"),
    ),
    "tag": (
        _set("-l", "--list", "-n", "--sort", "--contains", "--no-contains", "--points-at", "--merged",
             "--no-merged", "--format", "--column", "--no-column", "-i", "--ignore-case", "--color"),
        _set("-l", "--list", "--merged", "--no-merged", "--contains", "--no-contains", "--points-at"),
    ),
}  # fmt: skip
_GIT_CONFIG_READS = _set("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color",
                         "--get-colorbool")  # fmt: skip
_GIT_CONFIG_WRITES = _set("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section",
                          "-e", "--edit")  # fmt: skip
_GLOB_CHARACTERS = frozenset("*?[")


def git_reads(args: tuple[str, ...]) -> Reads | None:
    """What `git ARGS` reads when it only reads: a subcommand that lists or shows, with no option that runs a
    program, writes a file or reads another repository's files; None otherwise."""
    index = 0
    places: list[str] = []
    while index < len(args) and args[index].startswith("-"):
        word = args[index]
        if word == "-C" and index + 1 < len(args):
            places.append(args[index + 1])
            index += 2
        elif word in _GIT_GLOBAL_FLAGS:
            index += 1
        else:
            return None  # -c, --config-env, --exec-path, --git-dir, --work-tree and the like
    if index >= len(args) or any(_GLOB_CHARACTERS & set(place) for place in places):
        return None
    subcommand, rest = args[index], args[index + 1 :]
    if not _git_options_safe(subcommand, rest) or not _git_reads_only(subcommand, rest):
        return None
    # `git show HEAD:.env` prints a file as committed; `git grep` searches the files of the working tree.
    committed = [word.partition(":")[2] for word in rest if ":" in word and not word.startswith("-")]
    # Each -C is relative to the one before it: `-C src -C ../sub` is `sub`.
    folders = [os.path.join(*places[: count + 1]) for count in range(len(places))]
    start = folders[-1] if folders else "."
    trees = (start,) if subcommand == "grep" else ()
    return Reads(files=(*folders, *(path for path in committed if path)), trees=trees, repository_from=start)


def _git_options_safe(subcommand: str, rest: tuple[str, ...]) -> bool:
    before_paths = rest[: rest.index("--")] if "--" in rest else rest
    unsafe_letters = set("O" + _GIT_UNSAFE_SHORT.get(subcommand, ""))
    for word in before_paths:
        if word.startswith("--"):
            name = word.partition("=")[0]
            if name not in _GIT_SAFE_LONG and any(option.startswith(name) for option in _GIT_UNSAFE_LONG):
                return False
        elif word.startswith("-") and unsafe_letters & set(word[1:]):
            return False  # a cluster (`-nO'cmd'`): any letter counts, a value's too
    return True


def _git_reads_only(subcommand: str, rest: tuple[str, ...]) -> bool:
    before_paths = rest[: rest.index("--")] if "--" in rest else rest
    options = [word for word in before_paths if word.startswith("-")]
    names = {word.partition("=")[0] for word in options}
    if subcommand in _GIT_READERS:
        return True
    if subcommand in _GIT_LISTERS:
        allowed, listing = _GIT_LISTERS[subcommand]
        operands = [word for word in rest if not word.startswith("-")]
        valid = all(name in allowed or (subcommand == "tag" and re.fullmatch(r"-n\d*", name)) for name in names)
        return valid and (not operands or bool(names & listing))
    if subcommand == "config":
        if rest[:1] in (("get",), ("list",)):
            return not names & _GIT_CONFIG_WRITES
        return bool(names & _GIT_CONFIG_READS) and not names & _GIT_CONFIG_WRITES
    if subcommand == "remote":
        return rest in ((), ("-v",), ("--verbose",)) or (rest[:1] == ("get-url",) and len(rest) >= 2)
    if subcommand == "stash":
        return rest[:1] in (("list",), ("show",))
    if subcommand == "worktree":
        return rest[:1] == ("list",)
    if subcommand == "reflog":
        changes = {"expire", "delete", "drop"} & set(rest)
        return not changes and (not rest or rest[0] == "show" or rest[0].startswith("-"))
    return False
