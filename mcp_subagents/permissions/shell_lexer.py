"""The shell lexer: a command line split into the simple commands it runs, for permission checks.

The lexer is deliberately conservative. What it does not understand raises `ShellSyntaxError`, and
the caller then asks instead of allowing. Splitting too much is safe (every piece must be allowed),
so grouping characters such as `(`, `)` and `{` are treated as separators too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BLANKS = " \t"
_WORD_BREAK = " \t\n;&|()<>"
_DEV_NULL_LIKE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_RESERVED = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_GROUP_DEPTH = 32


class ShellSyntaxError(ValueError):
    """The command uses shell syntax this parser does not follow (or is not valid shell)."""


@dataclass(frozen=True, slots=True)
class Redirect:
    target: str
    """The file name with quotes removed."""
    writes: bool
    known: bool
    """False when the name holds expansions (`$VAR`, globs, `~user`), so the file cannot be known in advance."""


@dataclass(frozen=True, slots=True)
class Substitution:
    """A word that is one substitution and nothing else: `$(cmd)`, `"$(cmd)"`, backticks, or `<(cmd)`."""

    code: str
    process: bool
    """`<(cmd)` or `>(cmd)`: the word becomes the name of a file to read the output from (or write to)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    words: tuple[str, ...]
    """The words as written, quotes kept; redirections and leading reserved words removed."""
    values: tuple[str, ...]
    """The same words with quotes and escapes removed."""
    dynamic: tuple[bool, ...] = ()
    """Per word: the shell changes it when it runs (`$VAR`, `$(...)`, backticks, `{a,b}`), so its value above is
    not what the program gets. Empty when unknown (a command built by hand)."""
    redirects: tuple[Redirect, ...] = ()
    substitution: bool = False
    """Command or process substitution (`$(...)`, backticks, `<(...)`) runs code inside this command."""
    scripts: tuple[str, ...] = ()
    """The code inside those substitutions, for deny and ask rules to look into."""
    feeds: tuple[str, ...] = ()
    """The redirections that feed the command or run code, as written: input files (`< in.txt`), here-strings,
    here-documents (operator, then the body), and any redirection whose target holds a substitution."""
    stdin: tuple[str, ...] = ()
    """The text of its here-strings and here-documents: what a shell reading its input would run."""
    piped: bool = False
    """Its input is the output of the command before it (`a | b`)."""
    substitutions: tuple[Substitution | None, ...] = ()
    """Per word: the substitution the word is, when it is nothing else. Empty when unknown."""
    input_scripts: tuple[str, ...] = ()
    """Code whose output is the command's standard input: `< <(cmd)`, `<<< "$(cmd)"`."""

    @property
    def text(self) -> str:
        """The command's words joined by single spaces: what a rule for its program is written against."""
        return " ".join(self.words)

    @property
    def rule_text(self) -> str:
        """The text an allow rule must match: the words and what feeds the command. `git status <<< "$(cmd)"` is
        not `git status`: the here-string runs `cmd`."""
        return " ".join((*self.words, *self.feeds))

    @property
    def value_text(self) -> str:
        return " ".join(self.values)


def split_command(command: str) -> tuple[SimpleCommand, ...]:
    """The simple commands of a command line, split at `&&`, `||`, `;`, `|`, `&`, newlines and parentheses.

    Raises:
        ShellSyntaxError: an unterminated quote or substitution, a redirection without a target, a missing
            here-document end, or an expansion this parser does not follow.
    """
    return _Scanner(command).run()


@dataclass(slots=True)
class _Word:
    raw: str
    value: str
    substitution: bool
    known: bool
    dynamic: bool = False
    """The shell changes it when it runs: `$` expansions, substitutions, or brace expansion (`{a,b}`)."""
    whole: Substitution | None = None
    """The substitution the word is, when it is nothing else."""


@dataclass(slots=True)
class _Builder:
    words: list[_Word] = field(default_factory=lambda: [])
    redirects: list[Redirect] = field(default_factory=lambda: [])
    substitution: bool = False
    scripts: list[str] = field(default_factory=lambda: [])
    feeds: list[str] = field(default_factory=lambda: [])
    stdin: list[str] = field(default_factory=lambda: [])
    input_scripts: list[str] = field(default_factory=lambda: [])
    piped: bool = False

    def build(self) -> SimpleCommand | None:
        words = list(self.words)
        while words and words[0].raw in _RESERVED:
            words.pop(0)
        raws = tuple(word.raw for word in words)
        if _is_for_header(raws) and not self.substitution and not self.redirects:
            return None
        if not raws and not self.redirects and not self.substitution:
            return None
        return SimpleCommand(
            words=raws,
            values=tuple(word.value for word in words),
            dynamic=tuple(word.dynamic for word in words),
            redirects=tuple(self.redirects),
            substitution=self.substitution,
            scripts=tuple(self.scripts),
            feeds=tuple(self.feeds),
            stdin=tuple(self.stdin),
            piped=self.piped,
            substitutions=tuple(word.whole for word in words),
            input_scripts=tuple(self.input_scripts),
        )


def _expands(following: str) -> bool:
    """Whether `$` followed by this character expands (`$x`, `${x}`, `$(...)`, `$'...'`, `$?`); `foo$` does not."""
    return bool(following) and (following.isalnum() or following in "_{('@*#?$!-")


def _is_for_header(words: tuple[str, ...]) -> bool:
    """`for NAME in WORDS` runs nothing by itself (substitutions in WORDS are flagged separately)."""
    if len(words) < 2 or words[0] not in ("for", "select") or not _NAME.fullmatch(words[1]):
        return False
    return len(words) == 2 or words[2] == "in"


@dataclass(slots=True)
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    owner: _Builder
    body: list[str] = field(default_factory=lambda: [])


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.builders: list[_Builder] = []
        self.current = _Builder()
        self.heredocs: list[_Heredoc] = []
        self.depth = 0

    def run(self) -> tuple[SimpleCommand, ...]:
        text = self.text
        while True:
            self._skip_blanks()
            if self.pos >= len(text):
                break
            char = text[self.pos]
            if char == "\n":
                self.pos += 1
                self._read_heredocs()
                self._end_command()
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif char in ";|()" or (char == "&" and self._peek(1) != ">"):
                self._operator(char)
            elif char in "<>&" and not (char in "<>" and self._peek(1) == "("):
                self._redirect()
            else:
                word = self._word()
                if word.raw.isdigit() and self.pos < len(text) and text[self.pos] in "<>":
                    self._redirect()
                else:
                    self._add(word)
        if self.heredocs:
            raise ShellSyntaxError(f"here-document without its end line '{self.heredocs[0].delimiter}'")
        self._end_command()
        built = (builder.build() for builder in self.builders)
        return tuple(command for command in built if command is not None)

    def _peek(self, offset: int) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def _skip_blanks(self) -> None:
        while self.pos < len(self.text):
            if self.text[self.pos] in _BLANKS:
                self.pos += 1
            elif self.text.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                break

    def _add(self, word: _Word) -> None:
        self.current.words.append(word)
        self.current.substitution = self.current.substitution or word.substitution

    def _end_command(self, *, piped: bool = False) -> None:
        self.builders.append(self.current)
        self.current = _Builder(piped=piped)

    def _operator(self, char: str) -> None:
        self.pos += 1
        following = self._peek(0)
        if char == ";":
            while self._peek(0) in (";", "&"):
                self.pos += 1
        elif (char == "&" and following == "&") or (char == "|" and following in ("|", "&")):
            self.pos += 1
        self._end_command(piped=char == "|" and following != "|")

    def _redirect(self) -> None:
        text, start = self.text, self.pos
        for operator, writes in (("&>>", True), ("&>", True), ("<>", True), (">>", True), (">|", True)):
            if text.startswith(operator, start):
                self.pos += len(operator)
                self._file_redirect(writes=writes, operator=operator)
                return
        if text.startswith("<<<", start):
            self.pos += 3
            word = self._target_word()
            self._add_substitution_of(word)
            self.current.feeds.append(f"<<< {word.raw}")
            self.current.stdin.append(word.value)
            if word.whole is not None:
                self.current.input_scripts.append(word.whole.code)
        elif text.startswith("<<", start):
            strip_tabs = text.startswith("<<-", start)
            self.pos += 3 if strip_tabs else 2
            word = self._target_word()
            quoted = word.raw != word.value
            self.current.feeds.append(text[start : self.pos].strip())
            self.heredocs.append(_Heredoc(word.value, strip_tabs, quoted, self.current))
        elif text.startswith((">&", "<&"), start):
            self.pos += 2
            word = self._target_word()
            if re.fullmatch(r"\d*-?", word.value) and word.raw == word.value:
                return
            if text[start] == "<":
                raise ShellSyntaxError(f"unsupported redirection '<&{word.raw}'")
            self._record(word, writes=True, operator=">&")
        else:
            self.pos += 1
            self._file_redirect(writes=text[start] == ">", operator=text[start])

    def _file_redirect(self, *, writes: bool, operator: str) -> None:
        self._record(self._target_word(), writes=writes, operator=operator)

    def _record(self, word: _Word, *, writes: bool, operator: str) -> None:
        self._add_substitution_of(word)
        if operator == "<" and word.whole is not None and word.whole.process:
            self.current.input_scripts.append(word.whole.code)
        harmless = word.value in _DEV_NULL_LIKE and word.known
        # Input and code reach the command through these; an output file is judged by the file rules instead.
        if word.substitution or (operator.startswith("<") and not harmless):
            self.current.feeds.append(f"{operator} {word.raw}")
        if writes and harmless:
            return
        self.current.redirects.append(Redirect(target=word.value, writes=writes, known=word.known))

    def _add_substitution_of(self, word: _Word) -> None:
        self.current.substitution = self.current.substitution or word.substitution

    def _target_word(self) -> _Word:
        self._skip_blanks()
        if self.pos >= len(self.text):
            raise ShellSyntaxError("a redirection has no file name")
        char = self.text[self.pos]
        if char in _WORD_BREAK and not (char in "<>" and self._peek(1) == "("):
            raise ShellSyntaxError("a redirection has no file name")
        return self._word()

    def _word(self) -> _Word:
        text, start = self.text, self.pos
        scripts_before = len(self.current.scripts)
        value: list[str] = []
        substitution = braces = False
        known = True
        expanded = False
        while self.pos < len(text):
            char = text[self.pos]
            if char in "<>" and self.pos == start and self._peek(1) == "(":
                self.pos += 1
                self._group()
                substitution, known, expanded = True, False, True
            elif char in _WORD_BREAK:
                break
            elif char == "\\":
                self._backslash(value)
            elif char == "'":
                value.append(self._single_quoted())
            elif char == '"':
                found, quoted_expansion = self._double_quoted(value)
                substitution = substitution or found
                known = known and not quoted_expansion
                expanded = expanded or quoted_expansion
            elif char == "`":
                self._backticks()
                substitution, known, expanded = True, False, True
            elif char == "$":
                expanded = expanded or _expands(self._peek(1))
                found = self._dollar(value)
                substitution = substitution or found
                known = False
            else:
                if char in "*?[" or (char == "~" and self.pos == start):
                    known = False
                braces = braces or char == "{"
                value.append(char)
                self.pos += 1
        raw = text[start : self.pos].replace("\\\n", "")
        joined = "".join(value)
        dynamic = expanded or (braces and ("," in joined or ".." in joined))
        whole = self._whole_substitution(raw, joined, scripts_before)
        return _Word(raw=raw, value=joined, substitution=substitution, known=known, dynamic=dynamic, whole=whole)

    def _whole_substitution(self, raw: str, value: str, scripts_before: int) -> Substitution | None:
        """The substitution a word is when it holds one and nothing else (`$(cmd)`, `"$(cmd)"`, `<(cmd)`)."""
        scripts = self.current.scripts[scripts_before:]
        if len(scripts) != 1 or value:
            return None
        bare = raw[1:-1] if raw.startswith('"') and raw.endswith('"') else raw
        if bare.startswith(("<(", ">(")) and bare.endswith(")"):
            return Substitution(code=scripts[0], process=True)
        if (bare.startswith("$(") and bare.endswith(")")) or (bare.startswith("`") and bare.endswith("`")):
            return Substitution(code=scripts[0], process=False)
        return None

    def _backslash(self, value: list[str]) -> None:
        following = self._peek(1)
        if following == "":
            value.append("\\")
            self.pos += 1
            return
        if following != "\n":
            value.append(following)
        self.pos += 2

    def _single_quoted(self) -> str:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            raise ShellSyntaxError("unterminated single quote")
        content = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return content

    def _double_quoted(self, value: list[str]) -> tuple[bool, bool]:
        """Consume a "..." string; returns (has a substitution, has any expansion)."""
        text = self.text
        self.pos += 1
        substitution = expanded = False
        while self.pos < len(text):
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return substitution, expanded
            if char == "\\":
                following = self._peek(1)
                if following in ('"', "\\", "$", "`"):
                    value.append(following)
                    self.pos += 2
                elif following == "\n":
                    self.pos += 2
                else:
                    value.append("\\")
                    self.pos += 1
            elif char == "`":
                self._backticks()
                substitution = expanded = True
            elif char == "$" and self._peek(1) in ("(", "{"):
                substitution = self._dollar(value) or substitution
                expanded = True
            else:
                if char == "$" and _expands(self._peek(1)):
                    expanded = True
                value.append(char)
                self.pos += 1
        raise ShellSyntaxError("unterminated double quote")

    def _dollar(self, value: list[str]) -> bool:
        """Consume `$...` at the cursor; returns True for a command substitution."""
        following = self._peek(1)
        if following == "(":
            self.pos += 1
            self._group()
            return True
        if following == "{":
            self._braced_parameter()
            return False
        if following == "'":
            self.pos += 1
            self._ansi_c_quoted(value)
            return False
        value.append("$")
        self.pos += 1
        return False

    def _group(self) -> None:
        """Skip `( ... )` with the cursor on `(`, respecting quotes and nesting; its content is kept as a script."""
        if self.depth >= _MAX_GROUP_DEPTH:
            raise ShellSyntaxError("substitutions are nested too deeply")
        self.depth += 1
        try:
            self._skip_group()
        finally:
            self.depth -= 1

    def _skip_group(self) -> None:
        text = self.text
        start = self.pos
        depth = 0
        scratch: list[str] = []
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char == "'":
                self._single_quoted()
            elif char == '"':
                self._double_quoted(scratch)
            elif char == "`":
                self._backticks()
            elif char == "(":
                depth += 1
                self.pos += 1
            elif char == ")":
                depth -= 1
                self.pos += 1
                if depth == 0:
                    self.current.scripts.append(text[start + 1 : self.pos - 1])
                    return
            else:
                self.pos += 1
        raise ShellSyntaxError("unterminated command substitution '$('")

    def _backticks(self) -> None:
        text = self.text
        self.pos += 1
        start = self.pos
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char == "`":
                self.current.scripts.append(text[start : self.pos])
                self.pos += 1
                return
            else:
                self.pos += 1
        raise ShellSyntaxError("unterminated backtick substitution")

    def _braced_parameter(self) -> None:
        text = self.text
        self.pos += 2
        depth = 1
        while self.pos < len(text):
            char = text[self.pos]
            if char in "'\"`" or (char == "$" and self._peek(1) == "("):
                raise ShellSyntaxError("quotes or substitutions inside '${...}' are not supported")
            if char == "\\":
                self.pos += 2
                continue
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return
            self.pos += 1
        raise ShellSyntaxError("unterminated '${'")

    def _ansi_c_quoted(self, value: list[str]) -> None:
        text = self.text
        self.pos += 1
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                value.append(text[self.pos : self.pos + 2])
                self.pos += 2
            elif char == "'":
                self.pos += 1
                return
            else:
                value.append(char)
                self.pos += 1
        raise ShellSyntaxError("unterminated $'...' string")

    def _read_heredocs(self) -> None:
        text = self.text
        for heredoc in self.heredocs:
            while True:
                if self.pos >= len(text):
                    raise ShellSyntaxError(f"here-document without its end line '{heredoc.delimiter}'")
                end = text.find("\n", self.pos)
                end = len(text) if end < 0 else end
                line = text[self.pos : end]
                self.pos = min(end + 1, len(text))
                if (line.lstrip("\t") if heredoc.strip_tabs else line) == heredoc.delimiter:
                    break
                heredoc.body.append(line)
                if not heredoc.quoted and ("$(" in line or "`" in line):
                    heredoc.owner.substitution = True
                    heredoc.owner.scripts.append(line)
            body = "\n".join(heredoc.body)
            heredoc.owner.feeds.append(body)
            heredoc.owner.stdin.append(body)
        self.heredocs.clear()
