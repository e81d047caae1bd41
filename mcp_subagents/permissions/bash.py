"""The command model for permission checks: the simple commands of a command line, and the texts deny and ask
rules are matched against (wrappers such as `sudo` or `env` removed, code inside substitutions and `sh -c`).

The lexer itself lives in `shell_lexer`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .shell_lexer import Redirect, ShellSyntaxError, SimpleCommand, split_command

__all__ = [
    "SHELLS",
    "WRAPPERS",
    "Redirect",
    "ShellSyntaxError",
    "SimpleCommand",
    "Wrapper",
    "command_start",
    "inner_commands",
    "matching_variants",
    "printed_by",
    "printed_text",
    "program_name",
    "shell_input",
    "split_command",
]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox-sh"})
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_FIND_RUNNERS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SOURCING = frozenset({"source", "."})
_STANDARD_INPUT_FILES = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_MAX_NESTING = 3


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A program that runs the command given as its arguments (`sudo rm x`) or as a command line (`su -c 'rm x'`)."""

    with_value: frozenset[str] = frozenset()
    """Options whose value is the next word."""
    before_command: int = 0
    """Words between its options and the command: timeout's duration, flock's lock file, chrt's priority."""
    script_options: frozenset[str] = frozenset()
    """Options whose value is a command line a shell runs (`flock -c`, `su -c`, `script -c`)."""
    runs_arguments: bool = True
    """False when the words after its options are not a command (`su USER`, `script FILE`)."""
    flags: frozenset[str] = frozenset()
    """Options known to take no value. After any other option, deny rules also look one word further."""


def _wrapper(
    *with_value: str, before: int = 0, scripts: tuple[str, ...] = (), runs: bool = True, flags: str = ""
) -> Wrapper:
    return Wrapper(frozenset(with_value), before, frozenset(scripts), runs, frozenset(flags.split()))


WRAPPERS: dict[str, Wrapper] = {
    "sudo": _wrapper("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--host",
                     "--prompt", "--close-from", "--chdir", "--role", "--type", "--other-user", "--command-timeout",
                     "--chroot", flags="-A -b -E -e -H -i -K -k -l -n -P -S -s -V -v -B -N --askpass --background "
                     "--preserve-env --edit --set-home --login --non-interactive --preserve-groups --stdin --shell"),
    "doas": _wrapper("-u", "-a", "-C", flags="-n -s -L"),
    "pkexec": _wrapper("--user"),
    "env": _wrapper("-u", "-C", "--unset", "--chdir", flags="-i -0 -v --ignore-environment --null --debug"),
    "nohup": _wrapper(),
    "nice": _wrapper("-n", "--adjustment"),
    "ionice": _wrapper("-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid",
                       flags="-t --ignore"),
    "chrt": _wrapper("-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline", before=1),
    "taskset": _wrapper(before=1),
    "setpriv": _wrapper("--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps",
                        "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
                        "--apparmor-profile", "--landlock-access", "--landlock-rule", "--seccomp-filter"),
    "prlimit": _wrapper("-p", "-o", "--pid", "--output"),
    "unshare": _wrapper("-R", "-w", "-S", "-G", "-l", "--root", "--wd", "--setuid", "--setgid", "--setgroups",
                        "--map-user", "--map-group", "--map-users", "--map-groups", "--propagation", "--monotonic",
                        "--boottime", "--load-interp"),
    "nsenter": _wrapper("-t", "-S", "-G", "--target", "--setuid", "--setgid", "--env"),
    "systemd-run": _wrapper("-p", "-u", "-E", "-M", "-H", "-C", "--property", "--unit", "--description", "--slice",
                            "--setenv", "--uid", "--gid", "--working-directory", "--machine", "--host", "--nice",
                            "--service-type", "--on-active", "--on-boot", "--on-startup", "--on-unit-active",
                            "--on-unit-inactive", "--on-calendar", "--timer-property", "--path-property",
                            "--socket-property", "--capsule"),
    "strace": _wrapper("-e", "-o", "-p", "-s", "-u", "-E", "-a", "-I", "-O", "-P", "-S", "-X", "-b", "--trace",
                       "--signal", "--output", "--attach", "--string-limit", "--user", "--env", "--columns",
                       "--interruptible", "--trace-path", "--summary-sort-by", "--const-print-style", "--detach-on"),
    "ltrace": _wrapper("-a", "-A", "-D", "-e", "-F", "-l", "-n", "-o", "-p", "-s", "-u", "-x", "--align", "--output",
                       "--library", "--indent"),
    "time": _wrapper("-f", "-o", "--format", "--output", flags="-p -v -a -q --portability --verbose --append --quiet"),
    "timeout": _wrapper("-s", "-k", "--signal", "--kill-after", before=1,
                        flags="-v --verbose --foreground --preserve-status"),
    "stdbuf": _wrapper("-i", "-o", "-e", "--input", "--output", "--error"),
    "flock": _wrapper("-w", "-E", "--timeout", "--wait", "--conflict-exit-code", before=1,
                      scripts=("-c", "--command"), flags="-s -x -e -u -n -o -F --shared --exclusive --unlock "
                      "--nonblock --nb --close --no-fork --verbose"),
    "script": _wrapper("-E", "-I", "-O", "-B", "-T", "-m", "-o", "--echo", "--log-in", "--log-out", "--log-io",
                       "--log-timing", "--logging-format", "--output-limit", scripts=("-c", "--command"), runs=False),
    "su": _wrapper("-s", "-g", "-G", "-w", "--shell", "--group", "--supp-group", "--whitelist-environment",
                   scripts=("-c", "--command", "--session-command"), runs=False),
    "runuser": _wrapper("-u", "-s", "-g", "-G", "-w", "--user", "--shell", "--group", "--supp-group",
                        "--whitelist-environment", scripts=("-c", "--command", "--session-command")),
    "sg": _wrapper(before=1, scripts=("-c",)),
    "chroot": _wrapper("--userspec", "--groups", before=1),
    "parallel": _wrapper("-j", "-S", "-a", "-d", "-E", "-I", "-n", "-N", "-L", "--jobs", "--sshlogin",
                         "--arg-file", "--delimiter", "--colsep", "--joblog", "--results", "--tmpdir", "--workdir",
                         "--delay", "--timeout", "--retries", "--max-args", "--load", "--memfree", "--tagstring",
                         "--env", "--sshloginfile", "--halt"),
    "chronic": _wrapper(flags="-e -v"),
    "caffeinate": _wrapper("-t", "-w"),
    "faketime": _wrapper("-f", "-m", before=1),
    "fakeroot": _wrapper("-l", "-s", "-i", "--lib", "--faked"),
    "eatmydata": _wrapper(),
    "catchsegv": _wrapper(),
    "dbus-run-session": _wrapper("--config-file", "--dbus-daemon"),
    "xvfb-run": _wrapper("-n", "-s", "-f", "-e", "-p", "--server-num", "--server-args", "--auth-file",
                         "--error-file", "--xauth-protocol"),
    "coproc": _wrapper(),
    "command": _wrapper(),
    "builtin": _wrapper(),
    "exec": _wrapper("-a", flags="-c -l"),
    "xargs": _wrapper("-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E", "--arg-file", "--delimiter", "--eof",
                      "--max-args", "--max-procs", "--max-chars", "--process-slot-var",
                      flags="-0 -o -p -r -t -x --null --open-tty --interactive --no-run-if-empty --verbose --exit "
                      "--show-limits"),
    "watch": _wrapper("-n", "--interval"),
    "busybox": _wrapper(),
    "setsid": _wrapper(flags="-c -f -w --ctty --fork --wait"),
    "unbuffer": _wrapper(flags="-p"),
}  # fmt: skip
"""Commands that run the command after them (or a command line given to an option), with the options that take a
value. Deny and ask rules see the command inside."""


def program_name(word: str) -> str:
    """The program a command word runs, as rules name it: `/bin/rm` and `./rm` are `rm`."""
    return word.rsplit("/", 1)[-1]


def matching_variants(command: SimpleCommand, *, fed: str | None = None, depth: int = 0) -> Iterator[str]:
    """Texts a deny or ask rule is matched against: the command, the command without quotes, the command
    after wrappers such as `sudo`, `env X=1`, `timeout 5`, `flock FILE`, with a path program written by its name
    (`/bin/rm` is `rm`), and the commands inside substitutions, `sh -c '...'`, `eval`, `find -exec`, what a shell
    reads from a here-document, a here-string, a pipe (`fed`: the text the command before it printed) or a process
    substitution, and the command with each `$(cmd)` word replaced by what `cmd` prints where that is shown."""
    yield command.text
    yield command.value_text
    for start in (0, *_wrapped_starts(command.values), *_possible_starts(command.values)):
        if start:
            yield " ".join(command.words[start:])
            yield " ".join(command.values[start:])
        if start < len(command.values) and "/" in command.values[start]:
            yield " ".join((program_name(command.values[start]), *command.values[start + 1 :]))
    if depth >= _MAX_NESTING:
        return
    for inner in inner_commands(command, fed=fed):
        yield from matching_variants(inner, depth=depth + 1)
    printed = _with_printed_words(command)
    if printed is not None:
        yield from matching_variants(printed, depth=depth + 1)


def inner_commands(command: SimpleCommand, *, fed: str | None = None) -> Iterator[SimpleCommand]:
    """The commands this command runs in turn, as far as the command line shows them: those in its
    substitutions, `sh -c '...'`, `eval`, `find -exec`, `su -c`, `flock -c`, `source <(cmd)`, and what a shell reads
    from a here-document, a here-string, a pipe (`fed`) or a process substitution. Code that does not parse is
    skipped: the outer command is judged as opaque instead."""
    for inner_values in _found_commands(command.values):
        yield SimpleCommand(words=inner_values, values=inner_values)
    for script in (*command.scripts, *_inner_scripts(command, fed)):
        try:
            yield from split_command(script)
        except ShellSyntaxError:
            continue


def printed_text(command: SimpleCommand) -> str | None:
    """What `echo`, `printf`, or `cat` of a here-document or `<(cmd)`, writes to a pipe, when the command line shows
    it."""
    values = command.values[command_start(command.values) :]
    if not values:
        return None
    program = program_name(values[0])
    if program == "echo":
        return _echo_text(values[1:])
    if program == "printf":
        arguments = values[1:]
        if arguments[:1] == ("--",):
            arguments = arguments[1:]
        return _printf_text(arguments[0], arguments[1:]) if arguments else None
    if program == "cat" and len(values) == 1 and command.stdin:
        return "\n".join(command.stdin)
    if program == "cat" and len(values) == 1 and command.input_scripts:
        printed = [printed_by(script) for script in command.input_scripts]
        return "\n".join(text for text in printed if text is not None) or None
    return None


def printed_by(script: str) -> str | None:
    """What a command line prints, when every line it prints is shown (`echo a; printf b`); None otherwise."""
    try:
        pieces = split_command(script)
    except ShellSyntaxError:
        return None
    texts = [printed_text(piece) for piece in pieces]
    if not texts or any(text is None for text in texts):
        return None
    return "\n".join(text for text in texts if text is not None)


def _echo_text(words: tuple[str, ...]) -> str:
    index, escapes = 0, False
    while index < len(words) and re.fullmatch(r"-[neE]+", words[index]):
        escapes = escapes or "e" in words[index]
        index += 1
    text = " ".join(words[index:])
    return _unescaped(text) if escapes else text


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r", "v": "\v", "f": "\f"}
_CONVERSION = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d*)?([a-zA-Z]))")


def _unescaped(text: str) -> str:
    return re.sub(r"\\(.)", lambda match: _ESCAPES.get(match.group(1), match.group(0)), text)


def _printf_text(template: str, arguments: tuple[str, ...]) -> str:
    """printf's output for the common conversions (`%s`, `%b`, `%d`, ...): each takes the next argument, and the
    template repeats while arguments remain, as printf does."""
    remaining = list(arguments)
    parts: list[str] = []
    while True:
        used = False

        def convert(match: re.Match[str]) -> str:
            nonlocal used
            if match.group(0) == "%%":
                return "%"
            used = True
            value = remaining.pop(0) if remaining else ""
            return _unescaped(value) if match.group(1) == "b" else value

        parts.append(_unescaped(_CONVERSION.sub(convert, template)))
        if not remaining or not used:
            return "".join(parts)


def command_start(values: tuple[str, ...]) -> int:
    """Where the program that really runs starts, after variable assignments and wrappers such as `sudo`."""
    return max((0, *_wrapped_starts(values)))


def _wrapped_starts(values: tuple[str, ...]) -> Iterator[int]:
    index = 0
    while index < len(values):
        word = values[index]
        if _ASSIGNMENT.match(word):
            index += 1
            yield index
            continue
        wrapper = WRAPPERS.get(program_name(word))
        if wrapper is None or not wrapper.runs_arguments:
            return
        index = _past_options(values, index + 1, wrapper) + wrapper.before_command
        yield index


def _past_options(values: tuple[str, ...], index: int, wrapper: Wrapper) -> int:
    while index < len(values) and values[index].startswith("-") and values[index] != "-":
        option = values[index]
        index += 1
        if option == "--":
            break
        if option in wrapper.with_value and index < len(values):
            index += 1
    return index


def _possible_starts(values: tuple[str, ...]) -> Iterator[int]:
    """Where the command could also start: one word later than the table says, when the last option before it is
    one the table does not know (had it taken a value, the command starts there). Deny rules look there too."""
    index = 0
    while index < len(values):
        if _ASSIGNMENT.match(values[index]):
            index += 1
            continue
        wrapper = WRAPPERS.get(program_name(values[index]))
        if wrapper is None or not wrapper.runs_arguments:
            return
        past = _past_options(values, index + 1, wrapper)
        start = past + wrapper.before_command
        if past > index + 1 and _unknown_option(values[past - 1], wrapper):
            yield start + 1
        index = start


def _unknown_option(word: str, wrapper: Wrapper) -> bool:
    """An option whose taking a value the table cannot tell: not a known flag, nor one that carries its value."""
    if not word.startswith("-") or word == "--" or "=" in word or word in wrapper.flags:
        return False
    if word.startswith("--"):
        return word not in wrapper.with_value
    letters = [f"-{letter}" for letter in word[1:]]
    if letters[0] in wrapper.with_value and len(word) > 2:
        return False  # the value is attached: `-oL`
    return not all(letter in wrapper.flags for letter in letters)


def _inner_scripts(command: SimpleCommand, fed: str | None) -> Iterator[str]:
    """Code the command hands to a shell: `eval ...`, `sh -c '...'`, `env -S '...'`, `watch '...'`, `su -c`, `trap`,
    `source <(cmd)`, and for a shell that reads its input, the here-documents, here-strings, piped text and process
    substitutions it would run."""
    values = command.values
    for start in (0, *_wrapped_starts(values)):
        rest = values[start:]
        if not rest:
            continue
        program = program_name(rest[0])
        wrapper = WRAPPERS.get(program)
        if wrapper is not None:
            yield from _script_options(rest, wrapper)
        if program in ("eval", "parallel") and len(rest) > 1:
            yield " ".join(word for word in rest[1:] if program == "eval" or word not in (":::", "::::"))
        elif program == "watch" and len(rest) > 1:
            yield " ".join(word for word in rest[1:] if not word.startswith("-"))
        elif program == "trap" and len(rest) > 1:
            yield rest[2] if rest[1] == "--" and len(rest) > 2 else rest[1]
        elif program == "env":
            yield from _env_split_strings(rest)
        elif program in SHELLS or program in _SOURCING:
            yield from _shell_code(command, start, fed)


def _script_options(rest: tuple[str, ...], wrapper: Wrapper) -> Iterator[str]:
    """The values of a wrapper's command-line options (`-c 'rm x'`, `-c'rm x'`, `--command=rm x`), wherever they
    appear among its words. strace and ltrace also run `-o '|cmd'`."""
    letters = [option[1] for option in wrapper.script_options if len(option) == 2]
    for index, word in enumerate(rest[1:], start=1):
        following = rest[index + 1] if index + 1 < len(rest) else None
        name, equals, value = word.partition("=")
        if name in wrapper.script_options and name.startswith("--") and equals:
            yield value
        elif word in wrapper.script_options and following is not None:
            yield following
        elif word.startswith("-") and not word.startswith("--"):
            # In a cluster (`-qc 'cmd'`, `-c'cmd'`) the rest of the word, or else the next one, is the value.
            for letter in letters:
                at = word.find(letter, 1)
                if at > 0 and (word[at + 1 :] or following is not None):
                    yield word[at + 1 :] or following or ""
        if word in ("-o", "--output") and following is not None and following.startswith(("|", "!")):
            yield following[1:]


def _shell_code(command: SimpleCommand, start: int, fed: str | None) -> Iterator[str]:
    """What a shell (or `source`, `.`) runs: its `-c` string, or its input, or the output of a process substitution
    it is given as its script (`bash <(cmd)`, `source <(cmd)`)."""
    values = command.values[start:]
    substitutions = command.substitutions[start:] if command.substitutions else ()
    if program_name(values[0]) in _SOURCING:
        how, at = ("file", 1) if len(values) > 1 else ("stdin", None)
    else:
        how, at = _shell_input_at(values)
    if how == "string" and at is not None:
        yield values[at]
        return
    if how == "file" and at is not None:
        whole = substitutions[at] if at < len(substitutions) else None
        if whole is not None and whole.process:
            yield from _printed_or_nothing(whole.code)
            return
        if values[at] not in _STANDARD_INPUT_FILES:
            return
    yield from command.stdin
    if fed is not None:
        yield fed
    for script in command.input_scripts:
        yield from _printed_or_nothing(script)


def _printed_or_nothing(script: str) -> Iterator[str]:
    printed = printed_by(script)
    if printed is not None:
        yield printed


def _with_printed_words(command: SimpleCommand) -> SimpleCommand | None:
    """The command with each word that is a command substitution replaced by what it prints, when shown:
    `$(echo rm) -rf x` runs `rm -rf x`, `eval "$(printf 'rm -rf x')"` runs it too."""
    if not command.substitutions:
        return None
    values = list(command.values)
    changed = False
    for index, whole in enumerate(command.substitutions):
        if whole is None or whole.process or index >= len(values):
            continue
        printed = printed_by(whole.code)
        if printed is not None:
            values[index] = printed.rstrip("\n")
            changed = True
    if not changed:
        return None
    return SimpleCommand(words=tuple(values), values=tuple(values))


def shell_input(values: tuple[str, ...]) -> tuple[str, str | None]:
    """How a shell invocation (`values[0]` is the shell) gets its code: ("string", code) for `-c`, ("file", path)
    for a script file, ("stdin", None) when it reads its input."""
    how, at = _shell_input_at(values)
    return how, (values[at] if at is not None else None)


def _shell_input_at(values: tuple[str, ...]) -> tuple[str, int | None]:
    index, command_string = 1, False
    while index < len(values):
        word = values[index]
        if word == "--":
            index += 1
            break
        if word in _SHELL_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if word.startswith("--"):
            index += 1
            continue
        if len(word) > 1 and word[0] in "-+":
            command_string = command_string or (word[0] == "-" and "c" in word[1:])
            index += 1
            continue
        break
    at = index if index < len(values) else None
    if command_string:
        return "string", at
    if at is None or values[at] == "-":
        return "stdin", None
    return "file", at


def _env_split_strings(values: tuple[str, ...]) -> Iterator[str]:
    for index, word in enumerate(values):
        if word in ("-S", "--split-string") and index + 1 < len(values):
            yield values[index + 1]
        elif word.startswith("--split-string="):
            yield word.partition("=")[2]
        elif word.startswith("-S") and len(word) > 2:
            yield word[2:]


def _found_commands(values: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The commands `find` runs: `-exec cmd ... ;` and its kin, and `-delete` as the `rm` it amounts to."""
    start = command_start(values)
    if start >= len(values) or program_name(values[start]) != "find":
        return
    rest = values[start + 1 :]
    places = tuple(word for word in _leading_operands(rest)) or (".",)
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in _FIND_RUNNERS:
            end = index + 1
            while end < len(rest) and rest[end] not in (";", "+"):
                end += 1
            if end > index + 1:
                yield rest[index + 1 : end]
            index = end
        elif word == "-delete":
            yield ("rm", "-rf", *places)
            yield ("rm", *places)
        index += 1


def _leading_operands(words: tuple[str, ...]) -> Iterator[str]:
    for word in words:
        if word.startswith(("-", "(", "!")) or word in ("(", ")", "!"):
            return
        yield word
