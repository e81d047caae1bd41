"""Commands that only read, which default mode runs without asking, as Claude Code does.

A table of programs, each with the options that would make it write or run something else, and with what its
operands are (files it reads, names it looks at, or plain text). A command is read-only only when this module can
prove it: its program is in the table, every option is safe, no word is changed by the shell when it runs (`$VAR`,
`$(...)`, `{a,b}`), it writes no file, and any variables it sets are harmless ones such as `LC_ALL`. Anything else
(an unknown program, an option this table does not know to be safe where that matters) is not read-only, and the
normal permission check applies. Which files a read-only command reads is returned, so the caller can keep it
inside the allowed directories and apply Read rules to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .bash import SimpleCommand

Operands: TypeAlias = Literal["files", "text", "pattern then files"]


@dataclass(frozen=True, slots=True)
class Reads:
    """What a read-only command reads."""

    files: tuple[str, ...] = ()
    """Files and folders it names, as written (relative, absolute, `~/...`, or a glob)."""
    trees: tuple[str, ...] = ()
    """Folders whose files' contents it reads, recursively (`grep -r`, `rg`)."""
    moves_to: str | None = None
    """The folder `cd` or `pushd` moves to: later relative paths may be relative to it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Program:
    operands: Operands = "files"
    unsafe: frozenset[str] = frozenset()
    """Options that write a file or run a program: `-o` (short) or `--output` (long, abbreviations included)."""
    with_value: frozenset[str] = frozenset()
    """Options whose value is the next word (short ones may also carry it attached)."""
    recursive: frozenset[str] = frozenset()
    """Options that make it read the files inside folder operands."""
    pattern_options: frozenset[str] = frozenset()
    """Options that give the pattern, so that every operand is a file."""
    max_operands: int | None = None
    """More operands than this would write (`uniq IN OUT`) or change something (`hostname NAME`)."""
    searches_folders: bool = False
    """It reads folders recursively by itself (`rg`); without operands, the working directory."""


def _set(*names: str) -> frozenset[str]:
    return frozenset(names)


_TEXT = _Program(operands="text")
_FILES = _Program()
_GREP = _Program(
    operands="pattern then files",
    with_value=_set("-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--max-count",
                    "--after-context", "--before-context", "--context", "--directories", "--devices", "--include",
                    "--exclude", "--exclude-dir", "--exclude-from", "--label", "--binary-files", "--color", "--colour"),
    recursive=_set("-r", "-R", "--recursive", "--dereference-recursive"),
    pattern_options=_set("-e", "-f", "--regexp", "--file"),
)  # fmt: skip
_RG = _Program(
    operands="pattern then files",
    unsafe=_set("--pre", "--hostname-bin"),
    with_value=_set("-e", "-f", "-g", "-t", "-T", "-m", "-A", "-B", "-C", "-M", "-j", "-E", "-d", "-r", "--regexp",
                    "--file", "--glob", "--iglob", "--type", "--type-not", "--type-add", "--type-clear",
                    "--max-count", "--after-context", "--before-context", "--context", "--max-columns", "--threads",
                    "--encoding", "--max-depth", "--max-filesize", "--sort", "--sortr", "--replace", "--colors",
                    "--color", "--context-separator", "--field-match-separator", "--field-context-separator",
                    "--path-separator", "--ignore-file", "--engine", "--dfa-size-limit", "--regex-size-limit",
                    "--pre-glob"),
    pattern_options=_set("-e", "-f", "--regexp", "--file", "--files", "--type-list"),
    searches_folders=True,
)  # fmt: skip

PROGRAMS: dict[str, _Program] = {
    # Files in, text out.
    **dict.fromkeys(
        ("cat", "nl", "od", "hexdump", "strings", "tac", "rev", "fold", "expand", "unexpand", "fmt", "column",
         "paste", "pr", "tsort", "comm", "cmp", "sha256sum", "sha1sum", "sha512sum", "md5sum", "cksum", "b2sum",
         "ls", "readlink", "realpath", "stat"),
        _FILES,
    ),
    "head": _Program(with_value=_set("-n", "-c", "--lines", "--bytes")),
    "tail": _Program(with_value=_set("-n", "-c", "-s", "--lines", "--bytes", "--pid", "--sleep-interval",
                                     "--max-unchanged-stats")),
    "wc": _Program(unsafe=_set("--files0-from")),
    "du": _Program(unsafe=_set("--files0-from"), with_value=_set("-d", "-B", "-t", "--max-depth", "--block-size",
                                                                  "--threshold", "--exclude", "--time-style")),
    "df": _Program(with_value=_set("-B", "-t", "-x", "--block-size", "--type", "--exclude-type", "--output")),
    "tree": _Program(unsafe=_set("-o"), with_value=_set("-L", "-P", "-I", "-H", "-T", "--filelimit", "--charset",
                                                          "--sort", "--timefmt")),
    "file": _Program(unsafe=_set("-C", "--compile", "-f", "--files-from"),
                     with_value=_set("-m", "-F", "-P", "-e", "--magic-file", "--separator", "--exclude",
                                     "--parameter")),
    "cut": _Program(with_value=_set("-b", "-c", "-d", "-f", "--bytes", "--characters", "--delimiter", "--fields",
                                    "--output-delimiter")),
    "sort": _Program(unsafe=_set("-o", "--output", "--compress-program"),
                     with_value=_set("-k", "-t", "-S", "-T", "--key", "--field-separator", "--buffer-size",
                                     "--temporary-directory", "--parallel", "--batch-size", "--sort",
                                     "--files0-from", "--random-source")),
    "uniq": _Program(with_value=_set("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars",
                                     "--group", "--all-repeated"), max_operands=1),
    "base64": _Program(with_value=_set("-w", "--wrap"), max_operands=1),
    "xxd": _Program(unsafe=_set("-r", "--revert"), with_value=_set("-c", "-g", "-l", "-s", "-o", "-n"),
                    max_operands=1),
    "diff": _Program(unsafe=_set("--to-file", "--from-file"),
                     with_value=_set("-x", "-X", "-I", "-F", "-L", "-W", "-C", "-U", "--exclude", "--exclude-from",
                                     "--ignore-matching-lines", "--label", "--width", "--tabsize", "--line-format",
                                     "--starting-file", "--horizon-lines", "--color", "--palette"),
                     recursive=_set("-r", "--recursive")),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    # Text in, text out: operands are not files.
    **dict.fromkeys(
        ("echo", "tr", "seq", "expr", "basename", "dirname", "which", "type", "whereis", "uname", "id", "whoami",
         "groups", "nproc", "uptime", "free", "locale", "arch", "cal", "sleep", "true", "false", ":", "numfmt",
         "ps", "pgrep", "pidof", "tty"),
        _TEXT,
    ),
    "printf": _Program(operands="text", unsafe=_set("-v")),
    "date": _Program(operands="text", unsafe=_set("-s", "--set", "-f", "--file"),
                     with_value=_set("-d", "-r", "-I", "--date", "--reference", "--iso-8601")),
    "hostname": _Program(operands="text", unsafe=_set("-F", "-b", "--file", "--boot"), max_operands=0),
    "pwd": _Program(operands="text", max_operands=0),
}  # fmt: skip
"""Read-only programs checked option by option. find, sed, git, jq, test and cd have their own checks."""

SAFE_VARIABLES = frozenset(
    {"LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS",
     "LINES", "TIME_STYLE", "LS_COLORS", "POSIXLY_CORRECT", "GREP_COLORS"}
)  # fmt: skip
"""Variables a read-only command may set in front of it (and every `LC_*`); `PATH=... ls` is not read-only."""

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_HARMLESS_WRAPPERS: dict[str, frozenset[str]] = {
    "time": _set("-p"),
    "nice": _set("-n", "--adjustment"),
    "timeout": _set("-s", "-k", "--signal", "--kill-after"),
}
_FIND_UNSAFE = _set("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
                    "-files0-from")  # fmt: skip
_JQ_UNSAFE = _set("-f", "--from-file", "-L", "--rawfile", "--slurpfile", "--run-tests")
_JQ_TWO_VALUES = _set("--arg", "--argjson")
_JQ_ONE_VALUE = _set("--indent", "--seq-sep")


def read_only(piece: SimpleCommand) -> Reads | None:
    """What the command reads when it only reads; None when that cannot be shown."""
    if piece.substitution or len(piece.dynamic) != len(piece.values) or any(piece.dynamic):
        return None
    if any(redirect.writes or not redirect.known for redirect in piece.redirects):
        return None
    if any(word.startswith("~") and word != "~" and not word.startswith("~/") for word in piece.words):
        return None  # ~user is another user's home
    inputs = tuple(redirect.target for redirect in piece.redirects)
    values = _without_safe_prefix(piece.values)
    if values is None:
        return None
    if not values:
        return Reads(files=inputs)
    reads = _classify(values[0], values[1:])
    if reads is None:
        return None
    return Reads(files=(*inputs, *reads.files), trees=reads.trees, moves_to=reads.moves_to)


def _without_safe_prefix(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """The command after harmless variable assignments and wrappers (`LC_ALL=C`, `time`, `nice`, `timeout 5`)."""
    index = 0
    while index < len(values):
        assignment = _ASSIGNMENT.fullmatch(values[index])
        if assignment is None:
            break
        name = assignment.group(1)
        if name not in SAFE_VARIABLES and not name.startswith("LC_"):
            return None
        index += 1
    while index < len(values) and values[index] in _HARMLESS_WRAPPERS:
        wrapper, with_value = values[index], _HARMLESS_WRAPPERS[values[index]]
        index += 1
        while index < len(values) and values[index].startswith("-"):
            option = values[index]
            index += 1
            if option == "--":
                break
            if option in with_value:
                index += 1
        if wrapper == "timeout":
            index += 1  # the duration
    if index < len(values) and values[index] == "command":
        rest = values[index + 1 :]
        if rest[:1] in (("-v",), ("-V",)):
            return ("type",)
        index += 1
    return values[index:]


def _classify(program: str, args: tuple[str, ...]) -> Reads | None:
    special = _SPECIAL.get(program)
    if special is not None:
        return special(args)
    spec = PROGRAMS.get(program)
    return None if spec is None else _by_table(spec, args)


def _by_table(spec: _Program, args: tuple[str, ...]) -> Reads | None:
    parsed = _parse_options(args, unsafe=spec.unsafe, with_value=spec.with_value)
    if parsed is None:
        return None
    options, operands = parsed
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return None
    if spec.operands == "text":
        return Reads()
    if spec.operands == "pattern then files" and not options & spec.pattern_options:
        operands = operands[1:]
    recursive = bool(options & spec.recursive) or bool(options & {"-d=recurse", "--directories=recurse"})
    if spec.searches_folders or recursive:
        return Reads(files=operands, trees=operands or (".",))
    return Reads(files=operands)


def _parse_options(
    args: tuple[str, ...], *, unsafe: frozenset[str], with_value: frozenset[str]
) -> tuple[set[str], tuple[str, ...]] | None:
    """(options seen, also as `name=value` when they take one; operands), or None when an unsafe option appears.
    Long options may be abbreviated, as GNU getopt allows: `--out` counts as `--output`."""
    options: set[str] = set()
    operands: list[str] = []
    unsafe_long = [name for name in unsafe if name.startswith("--")]
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands += args[index:]
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            if name in unsafe or any(option.startswith(name) for option in unsafe_long):
                return None
            options.add(name)
            if name in with_value and not equals and index < len(args):
                value = args[index]
                index += 1
            if value:
                options.add(f"{name}={value}")
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                option = f"-{letter}"
                if option in unsafe:
                    return None
                options.add(option)
                if option in with_value:
                    value = word[position + 1 :]
                    if not value and index < len(args):
                        value = args[index]
                        index += 1
                    options.add(f"{option}={value}")
                    break
        else:
            operands.append(word)
    return options, tuple(operands)


def _find(args: tuple[str, ...]) -> Reads | None:
    index = 0
    while index < len(args) and (args[index] in ("-H", "-L", "-P", "-D") or args[index].startswith("-O")):
        index += 2 if args[index] == "-D" else 1
    places: list[str] = []
    while index < len(args) and not args[index].startswith(("-", "(", "!", ")")):
        places.append(args[index])
        index += 1
    if any(word in _FIND_UNSAFE for word in args[index:]):
        return None
    return Reads(files=tuple(places) or (".",))


def _sed(args: tuple[str, ...]) -> Reads | None:
    scripts: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("-e", "--expression") and index < len(args):
            scripts.append(args[index])
            index += 1
        elif word.startswith("--expression="):
            scripts.append(word.partition("=")[2])
        elif word.startswith("-e") and len(word) > 2:
            scripts.append(word[2:])
        elif word in ("-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate", "-z",
                      "--null-data", "-u", "--unbuffered", "--posix", "--debug", "--sandbox"):  # fmt: skip
            continue
        elif word.startswith("-") and len(word) > 1 and set(word[1:]) <= set("nErszu"):
            continue
        elif word.startswith("-"):
            return None  # -i (in place), -f (script file) and everything this check does not know
        else:
            operands.append(word)
    if not scripts:
        if not operands:
            return None
        scripts.append(operands.pop(0))
    return Reads(files=tuple(operands)) if all(_sed_script_reads_only(script) for script in scripts) else None


_SED_ADDRESS = re.compile(r"(\d+|\$|/(?:[^/\\]|\\.)*/[IM]*)(\s*,\s*(\d+|\$|[+~]\d+|/(?:[^/\\]|\\.)*/[IM]*))?\s*!?")
_SED_PRINTING = re.compile(r"[pPdDnNgGhHxlzF=]|[qQ]\s*\d*|[btT]\s*\w*|:\w+|#.*|")
_SED_SUBSTITUTION_FLAGS = re.compile(r"[gpiImM0-9]*\s*")


def _sed_script_reads_only(script: str) -> bool:
    """Whether a sed script only prints: addresses, p/d/q/n/=/l and hold-space commands, `s` and `y` without
    the `w` and `e` flags. `w`, `W`, `r`, `R`, `e`, blocks and anything this check cannot read fail. Splitting
    at `;` inside a regular expression makes a part unreadable, so such a script fails too."""
    for segment in re.split(r"[;\n]", script):
        command = segment.strip()
        address = _SED_ADDRESS.match(command)
        if address is not None:
            command = command[address.end() :].lstrip()
        if command[:1] in ("s", "y") and len(command) > 1:
            end = _past_sed_arguments(command)
            if end is None:
                return False
            rest = command[end:]
            if rest and not (command[0] == "s" and _SED_SUBSTITUTION_FLAGS.fullmatch(rest)):
                return False
        elif not _SED_PRINTING.fullmatch(command):
            return False
    return True


def _past_sed_arguments(command: str) -> int | None:
    """The index after `s/a/b/` or `y/a/b/` (any delimiter); None when unterminated."""
    delimiter = command[1]
    if delimiter in "\\ \t":
        return None
    index, seen = 2, 0
    while index < len(command):
        char = command[index]
        if char == "\\":
            index += 2
            continue
        if char == delimiter:
            seen += 1
            if seen == 2:
                return index + 1
        index += 1
    return None


_GIT_GLOBAL_FLAGS = _set("--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
                         "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--paginate",
                         "-p")  # fmt: skip
_GIT_OUTPUT_UNSAFE = _set("--output", "--ext-diff", "--no-index", "-O", "--open-files-in-pager")
_GIT_READERS = _set("status", "log", "show", "diff", "shortlog", "blame", "annotate", "grep", "rev-parse",
                    "rev-list", "describe", "ls-files", "ls-tree", "cat-file", "for-each-ref", "show-ref",
                    "merge-base", "name-rev", "count-objects", "version", "diff-tree", "diff-files", "diff-index",
                    "check-ignore", "check-attr", "whatchanged", "show-branch", "cherry", "help")  # fmt: skip
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


def _git(args: tuple[str, ...]) -> Reads | None:
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
    if index >= len(args):
        return None
    subcommand, rest = args[index], args[index + 1 :]
    if not _git_reads_only(subcommand, rest):
        return None
    # `git show HEAD:.env` prints a file as committed; `git grep` searches the files of the working tree.
    committed = [word.partition(":")[2] for word in rest if ":" in word and not word.startswith("-")]
    trees = (".",) if subcommand == "grep" else ()
    return Reads(files=(*places, *(path for path in committed if path)), trees=trees)


def _git_reads_only(subcommand: str, rest: tuple[str, ...]) -> bool:
    before_paths = rest[: rest.index("--")] if "--" in rest else rest
    options = [word for word in before_paths if word.startswith("-")]
    names = {word.partition("=")[0] for word in options}
    if subcommand in _GIT_READERS:
        unsafe_long = [name for name in _GIT_OUTPUT_UNSAFE if name.startswith("--")]
        return not any(
            name in _GIT_OUTPUT_UNSAFE or (name.startswith("--") and any(u.startswith(name) for u in unsafe_long))
            for name in names
        )
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
        return rest[:1] in (("list",), ("show",)) and not names & _GIT_OUTPUT_UNSAFE
    if subcommand == "worktree":
        return rest[:1] == ("list",)
    if subcommand == "reflog":
        return not rest or rest[0] == "show" or rest[0].startswith("-")
    return False


def _jq(args: tuple[str, ...]) -> Reads | None:
    operands: list[str] = []
    index, named_args = 0, False
    while index < len(args):
        word = args[index]
        index += 1
        if named_args:
            continue
        if word in ("--args", "--jsonargs"):
            named_args = True
        elif word in _JQ_UNSAFE or word.partition("=")[0] in _JQ_UNSAFE:
            return None
        elif word in _JQ_TWO_VALUES:
            index += 2
        elif word in _JQ_ONE_VALUE:
            index += 1
        elif word.startswith("-") and len(word) > 1:
            if not word.startswith("--") and {"f", "L"} & set(word[1:]):
                return None
        else:
            operands.append(word)
    if not operands:
        return Reads()
    program, files = operands[0], operands[1:]
    # The environment is scrubbed of known secrets, but a filter has no business reading it.
    if re.search(r"\benv\b|\$ENV\b|\binput_filename\b|\$__loc__", program):
        return None
    return Reads(files=tuple(files))


def _test(args: tuple[str, ...]) -> Reads | None:
    if args[-1:] == ("]",):
        args = args[:-1]
    # `test -v 'a[$(cmd)]'` and arithmetic operands make bash evaluate an array subscript, which runs code.
    if any(word in ("-v", "-R") or "[" in word or "$" in word or "`" in word for word in args):
        return None
    return Reads()


def _cd(args: tuple[str, ...]) -> Reads | None:
    operands = [word for word in args if word not in ("-L", "-P", "-e", "-@")]
    if len(operands) != 1 or operands[0] in ("-", "--") or operands[0].startswith("-"):
        return None
    return Reads(files=(operands[0],), moves_to=operands[0])


_SPECIAL: dict[str, Callable[[tuple[str, ...]], Reads | None]] = {
    "find": _find,
    "sed": _sed,
    "git": _git,
    "jq": _jq,
    "test": _test,
    "[": _test,
    "cd": _cd,
    "pushd": _cd,
}

__all__ = ["PROGRAMS", "SAFE_VARIABLES", "Reads", "read_only"]
