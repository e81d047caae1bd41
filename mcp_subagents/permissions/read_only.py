"""Commands that only read, which default mode runs without asking, as Claude Code does.

A table of programs, each with the options that would make it write or run something else, and with what its
operands are (files it reads, names it looks at, or plain text). A command is read-only only when this module can
prove it: its program is in the table, every option is safe, no word is changed by the shell when it runs (`$VAR`,
`$(...)`, `{a,b}`), it writes no file, and any variables it sets are harmless ones such as `LC_ALL`. Anything else
(an unknown program, an option this table does not know to be safe where that matters) is not read-only, and the
normal permission check applies. Which files a read-only command reads is returned, so the caller can keep it
inside the allowed directories and apply Read rules to it.

Unsafe is whatever a command can be told to do beyond reading what it names: write a file, run a program (git's
pager, external diff and filters; rg's preprocessor), read a list of other files (`--files0-from`, `sha256sum -c`),
or follow symbolic links out of the folders it reads (`grep -R`, `rg -L`, `find -L`, `du -L`, `tree -l`, `ls -RL`,
`diff -r` without `--no-dereference`). This module reads words only; where git looks for its repository, and
whether an operand is a folder, the caller checks on the filesystem (`repository_from`, `follows_links`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from .bash import SimpleCommand
from .read_only_git import git_reads
from .reads import Reads
from .reads import option_set as _set

Operands: TypeAlias = Literal["files", "text", "pattern then files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Program:
    operands: Operands = "files"
    unsafe: frozenset[str] = frozenset()
    """Options that write a file, run a program, follow links out of the folders it reads or read a list of other
    files: `-o` (short) or `--output` (long, abbreviations included)."""
    with_value: frozenset[str] = frozenset()
    """Options whose value is the next word (short ones may also carry it attached). Only options whose value is
    required: one with an optional value (`--color[=WHEN]`) takes it after `=` only."""
    file_options: frozenset[str] = frozenset()
    """Options (also in `with_value`) whose value is a file it reads (`grep -f PATTERNS_FILE`)."""
    recursive: frozenset[str] = frozenset()
    """Options that make it read the files inside folder operands."""
    pattern_options: frozenset[str] = frozenset()
    """Options that give the pattern, so that every operand is a file."""
    max_operands: int | None = None
    """More operands than this would write (`uniq IN OUT`) or change something (`hostname NAME`)."""
    searches_folders: bool = False
    """It reads folders recursively by itself (`rg`); without operands, the working directory."""
    unsafe_together: tuple[frozenset[str], ...] = ()
    """Groups of options unsafe only together (`ls -R` with `ls -L` lists the folders links point to)."""


_TEXT = _Program(operands="text")
_FILES = _Program()
_CHECKSUM = _Program(unsafe=_set("-c", "--check"))  # --check reads the files a list names
_GREP = _Program(
    operands="pattern then files",
    unsafe=_set("-R", "--dereference-recursive"),
    with_value=_set("-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--max-count",
                    "--after-context", "--before-context", "--context", "--directories", "--devices", "--include",
                    "--exclude", "--exclude-dir", "--exclude-from", "--label", "--binary-files",
                    "--group-separator"),
    file_options=_set("-f", "--file", "--exclude-from"),
    recursive=_set("-r", "--recursive", "-d=recurse", "--directories=recurse"),
    pattern_options=_set("-e", "-f", "--regexp", "--file"),
)  # fmt: skip
_RG = _Program(
    operands="pattern then files",
    # --pre and --hostname-bin run a program, -z runs decompressors, -L follows links anywhere.
    unsafe=_set("--pre", "--hostname-bin", "-L", "--follow", "-z", "--search-zip"),
    with_value=_set("-e", "-f", "-g", "-t", "-T", "-m", "-A", "-B", "-C", "-M", "-j", "-E", "-d", "-r", "--regexp",
                    "--file", "--glob", "--iglob", "--type", "--type-not", "--type-add", "--type-clear",
                    "--max-count", "--after-context", "--before-context", "--context", "--max-columns", "--threads",
                    "--encoding", "--max-depth", "--max-filesize", "--sort", "--sortr", "--replace", "--colors",
                    "--color", "--context-separator", "--field-match-separator", "--field-context-separator",
                    "--path-separator", "--ignore-file", "--engine", "--dfa-size-limit", "--regex-size-limit",
                    "--pre-glob", "--hyperlink-format"),
    file_options=_set("-f", "--file", "--ignore-file"),
    pattern_options=_set("-e", "-f", "--regexp", "--file", "--files", "--type-list"),
    searches_folders=True,
)  # fmt: skip

PROGRAMS: dict[str, _Program] = {
    # Files in, text out.
    **dict.fromkeys(
        ("cat", "nl", "od", "tac", "rev", "fold", "expand", "unexpand", "fmt", "column", "paste", "pr", "tsort",
         "comm", "cmp", "readlink", "realpath", "stat"),
        _FILES,
    ),
    **dict.fromkeys(("sha256sum", "sha1sum", "sha224sum", "sha384sum", "sha512sum", "md5sum", "cksum", "b2sum"),
                    _CHECKSUM),
    "ls": _Program(unsafe_together=(_set("-R", "--recursive"), _set("-L", "--dereference"))),
    "hexdump": _Program(with_value=_set("-e", "-f", "-n", "-s", "--format", "--format-file", "--length", "--skip"),
                        file_options=_set("-f", "--format-file")),
    "strings": _Program(with_value=_set("-n", "-t", "-e", "-T", "-s", "--bytes", "--radix", "--encoding", "--target",
                                        "--output-separator")),
    "head": _Program(with_value=_set("-n", "-c", "--lines", "--bytes")),
    "tail": _Program(with_value=_set("-n", "-c", "-s", "--lines", "--bytes", "--pid", "--sleep-interval",
                                     "--max-unchanged-stats")),
    "wc": _Program(unsafe=_set("--files0-from")),
    "du": _Program(unsafe=_set("--files0-from", "-L", "--dereference"),
                   with_value=_set("-d", "-B", "-t", "-X", "--max-depth", "--block-size", "--threshold", "--exclude",
                                   "--exclude-from", "--time-style"),
                   file_options=_set("-X", "--exclude-from")),
    "df": _Program(with_value=_set("-B", "-t", "-x", "--block-size", "--type", "--exclude-type")),
    # -l follows links anywhere; -o writes a file, and -R writes one into every folder (00Tree.html).
    "tree": _Program(unsafe=_set("-o", "-l", "-R", "--fromfile", "--infofile", "--hintro", "--houtro", "--gitfile"),
                     with_value=_set("-L", "-P", "-I", "-H", "-T", "--filelimit", "--charset", "--sort",
                                     "--timefmt")),
    "file": _Program(unsafe=_set("-C", "--compile", "-f", "--files-from"),
                     with_value=_set("-m", "-F", "-P", "-e", "--magic-file", "--separator", "--exclude",
                                     "--parameter"),
                     file_options=_set("-m", "--magic-file")),
    "cut": _Program(with_value=_set("-b", "-c", "-d", "-f", "--bytes", "--characters", "--delimiter", "--fields",
                                    "--output-delimiter")),
    # -T and --compress-program write or run, --files0-from and --random-source read other files.
    "sort": _Program(unsafe=_set("-o", "--output", "--compress-program", "-T", "--temporary-directory",
                                 "--files0-from", "--random-source"),
                     with_value=_set("-k", "-t", "-S", "--key", "--field-separator", "--buffer-size", "--parallel",
                                     "--batch-size", "--sort")),
    "uniq": _Program(with_value=_set("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"),
                     max_operands=1),
    "base64": _Program(with_value=_set("-w", "--wrap"), max_operands=1),
    "xxd": _Program(unsafe=_set("-r", "--revert"), with_value=_set("-c", "-g", "-l", "-s", "-o", "-n"),
                    max_operands=1),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    # Text in, text out: operands are not files.
    **dict.fromkeys(
        ("echo", "tr", "seq", "expr", "basename", "dirname", "which", "type", "whereis", "uname", "id", "whoami",
         "groups", "nproc", "uptime", "free", "locale", "arch", "cal", "sleep", "true", "false", ":", "numfmt",
         "pgrep", "pidof", "tty"),
        _TEXT,
    ),
    "printf": _Program(operands="text", unsafe=_set("-v")),
    "date": _Program(operands="text", unsafe=_set("-s", "--set", "-f", "--file"),
                     with_value=_set("-d", "-r", "--date", "--reference")),
    "hostname": _Program(operands="text", unsafe=_set("-F", "-b", "--file", "--boot"), max_operands=0),
    "pwd": _Program(operands="text", max_operands=0),
}  # fmt: skip
"""Read-only programs checked option by option. find, sed, git, jq, test, cd, diff and ps have their own checks."""

_DIFF = _Program(
    unsafe=_set("--to-file", "--from-file"),
    with_value=_set("-x", "-X", "-I", "-F", "-L", "-W", "-C", "-U", "-D", "-S", "--exclude", "--exclude-from",
                    "--ignore-matching-lines", "--label", "--width", "--tabsize", "--line-format", "--starting-file",
                    "--horizon-lines", "--palette", "--ifdef"),
    file_options=_set("-X", "--exclude-from"),
    recursive=_set("-r", "--recursive"),
)  # fmt: skip
_PS = _Program(
    operands="text",
    with_value=_set("-C", "-G", "-U", "-g", "-p", "-q", "-s", "-t", "-u", "-o", "-O", "--cols", "--columns",
                    "--format", "--group", "--Group", "--pid", "--ppid", "--quick-pid", "--sid", "--sort", "--tty",
                    "--user", "--User", "--width", "--lines", "--rows"),
)  # fmt: skip

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
                    "-files0-from", "-follow", "-L")  # fmt: skip
_JQ_UNSAFE = _set("-f", "--from-file", "-L", "--library-path", "--rawfile", "--slurpfile", "--argfile", "--run-tests")
_JQ_TWO_VALUES = _set("--arg", "--argjson")
_JQ_ONE_VALUE = _set("--indent", "--seq-sep")
_JQ_READS_MORE = re.compile(r"\benv\b|\$ENV\b|\binput_filename\b|\$__loc__|\$__prog|\bimport\b|\binclude\b|"
                            r"\bmodulemeta\b|\bget_search_list\b")  # fmt: skip
"""A filter that reads the environment or loads modules from files (`import`, `include`)."""


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
    # Whatever the program, a list of files to read from a file (`--files0-from`) is not what its words show.
    if any(word.startswith("--files0") or word == "-files0-from" for word in values[1:]):
        return None
    reads = _classify(values[0], values[1:])
    if reads is None:
        return None
    return replace(reads, files=(*inputs, *reads.files))


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
    parsed = _parse_options(args, spec)
    if parsed is None:
        return None
    options, operands, option_files = parsed
    if spec.unsafe_together and all(options & group for group in spec.unsafe_together):
        return None
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return None
    if spec.operands == "text":
        return Reads()
    if spec.operands == "pattern then files" and not options & spec.pattern_options:
        operands = operands[1:]
    recursive = bool(options & spec.recursive) or (spec is _GREP and _grep_recurses(options))
    if spec.searches_folders or recursive:
        return Reads(files=(*option_files, *operands), trees=operands or (".",))
    return Reads(files=(*option_files, *operands))


def _grep_recurses(options: set[str]) -> bool:
    """grep's `-d ACTION` takes abbreviations (`-d rec`): anything but `read` and `skip` may recurse."""
    actions = [option.partition("=")[2] for option in options if option.startswith(("-d=", "--directories="))]
    return any(action not in ("read", "skip") for action in actions)


def _parse_options(args: tuple[str, ...], spec: _Program) -> tuple[set[str], tuple[str, ...], list[str]] | None:
    """(options seen, also as `name=value` when they take one; operands; files named by option values), or None
    when an unsafe option appears. Long options may be abbreviated, as GNU getopt allows: `--out` counts as
    `--output`, and counts as unsafe when it could be the start of an unsafe option."""
    options: set[str] = set()
    operands: list[str] = []
    files: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands += args[index:]
            break
        if word.startswith("--"):
            written, equals, value = word.partition("=")
            if any(option.startswith(written) for option in spec.unsafe if option.startswith("--")):
                return None
            name = _full_name(written, spec)
            options.add(name)
            if name in spec.with_value and not equals and index < len(args):
                value = args[index]
                index += 1
            if value or equals:
                options.add(f"{name}={value}")
            if name in spec.file_options and value:
                files.append(value)
        elif word.startswith("-") and len(word) > 1:
            taken = _short_options(word, args[index] if index < len(args) else None, spec)
            if taken is None:
                return None
            found, value, used_next = taken
            options |= found
            index += used_next
            if value is not None and found & spec.file_options:
                files.append(value)
        else:
            operands.append(word)
    return options, tuple(operands), files


def _full_name(written: str, spec: _Program) -> str:
    """A long option as its full name when the abbreviation names one known option (`--dir` is `--directories`)."""
    known = {
        name.partition("=")[0]
        for group in (spec.with_value, spec.recursive, spec.pattern_options, spec.file_options, *spec.unsafe_together)
        for name in group
        if name.startswith("--")
    }
    if written in known:
        return written
    candidates = [name for name in known if name.startswith(written)]
    return candidates[0] if len(candidates) == 1 else written


def _short_options(word: str, following: str | None, spec: _Program) -> tuple[set[str], str | None, int] | None:
    """The options of a cluster (`-rn`, `-A3`, `-e PATTERN`), the value the last one takes, and whether it took the
    next word; None when one is unsafe."""
    found: set[str] = set()
    for position, letter in enumerate(word[1:], start=1):
        option = f"-{letter}"
        if option in spec.unsafe:
            return None
        found.add(option)
        if option in spec.with_value:
            value = word[position + 1 :]
            if value:
                found.add(f"{option}={value}")
                return found, value, 0
            if following is None:
                return found, None, 0
            found.add(f"{option}={following}")
            return found, following, 1
    return found, None, 0


def _find(args: tuple[str, ...]) -> Reads | None:
    if any(word in _FIND_UNSAFE for word in args):
        return None
    index = 0
    while index < len(args) and (args[index] in ("-H", "-P", "-D") or args[index].startswith("-O")):
        index += 2 if args[index] == "-D" else 1
    places: list[str] = []
    while index < len(args) and not args[index].startswith(("-", "(", "!", ")")):
        places.append(args[index])
        index += 1
    return Reads(files=tuple(places) or (".",))


def _diff(args: tuple[str, ...]) -> Reads | None:
    """GNU diff follows symbolic links inside the folders it compares unless told `--no-dereference`: recursively
    that reaches anywhere, so `-r` needs it; without `-r`, folder operands do."""
    parsed = _parse_options(args, _DIFF)
    if parsed is None:
        return None
    options, operands, option_files = parsed
    follows = not any(option.startswith("--no-d") and "--no-dereference".startswith(option) for option in options)
    recursive = bool(options & _DIFF.recursive)
    if recursive and follows:
        return None
    files = (*option_files, *operands)
    return Reads(files=files, trees=operands if recursive else (), follows_links=follows)


def _ps(args: tuple[str, ...]) -> Reads | None:
    """ps without its BSD `e` option, which prints the environment of other processes (keys and tokens)."""
    parsed = _parse_options(args, _PS)
    if parsed is None or any("e" in word for word in parsed[1]):
        return None
    return Reads()


def _strings(args: tuple[str, ...]) -> Reads | None:
    """strings reads more options from `@FILE`, which its words do not show."""
    if any(word.startswith("@") for word in args):
        return None
    return _by_table(PROGRAMS["strings"], args)


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
    if _JQ_READS_MORE.search(program):
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
    "git": git_reads,
    "jq": _jq,
    "test": _test,
    "diff": _diff,
    "ps": _ps,
    "strings": _strings,
    "[": _test,
    "cd": _cd,
    "pushd": _cd,
}

__all__ = ["PROGRAMS", "SAFE_VARIABLES", "Reads", "read_only"]
