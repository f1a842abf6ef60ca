"""A recursive-descent parser of bash's grammar into the tree of ``_tree``; it never interprets.

Each ``_parse_*`` method's docstring is its grammar rule. Text outside the grammar (a syntax error, or
nesting deeper than ``MAX_DEPTH``) ends the script it is in: the rest becomes one ``NotUnderstood`` node
saying why, never a guess. Parsing is linear in the text: every run is consumed by one regex of
``_tokens``, a heredoc's end is found by one search, and nothing is read twice except a backtick's body
(once more per level of nesting, which is bounded).

Heredoc bodies come after the end of the line that names them, so a heredoc's ``Redirection`` is made
when its operator is read and its ``heredoc`` field is set once, when the parser reaches the body (at the
next newline token). Nothing outside the parser sees a node before the parse ends.
"""

from __future__ import annotations

import re
from typing import Final, final
from typing import Literal as TypingLiteral

from ._tokens import RULES, Tokenizer, heredoc_body
from ._tree import (
    AndOr,
    AnsiCQuoted,
    Arithmetic,
    ArithmeticCommand,
    ArithmeticFor,
    Assignment,
    BraceExpansion,
    Case,
    CaseArm,
    Command,
    CommandList,
    CommandSubstitution,
    Coproc,
    DoubleQuoted,
    Escaped,
    ExtGlob,
    ForLoop,
    FunctionDefinition,
    Glob,
    Group,
    Heredoc,
    IfCommand,
    Literal,
    Loop,
    NotUnderstood,
    Parameter,
    Part,
    Pipeline,
    ProcessSubstitution,
    Redirection,
    SimpleCommand,
    SingleQuoted,
    Subshell,
    TestCommand,
    Tilde,
    Word,
)

__all__ = ["MAX_DEPTH", "parse", "parse_expansions", "parse_heredoc_body", "plain_word"]

MAX_DEPTH: Final = 16
"""How deeply lists (compound commands, substitutions, scripts) and expansions nest before the parser stops
reading: the rest is ``NotUnderstood`` with ``too_deep`` set."""

_COMPOUND: Final = (
    Subshell,
    Group,
    IfCommand,
    Loop,
    ForLoop,
    ArithmeticFor,
    Case,
    TestCommand,
    ArithmeticCommand,
)
_COMPOUND_KEYWORDS: Final = frozenset({"{", "if", "while", "until", "for", "select", "case", "[["})
_DECLARATIONS: Final = frozenset({"declare", "typeset", "local", "export", "readonly"})
_OUT_OF_PLACE: Final = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "}"})
_WORD_END: Final = frozenset(" \t\n|&;<>)")
_EXTGLOB_OPERATORS: Final = frozenset("@!+*?")
_SEQUENCE: Final = re.compile(r"(?:-?[0-9]+\.\.-?[0-9]+|[A-Za-z]\.\.[A-Za-z])(?:\.\.-?[0-9]+)?")
_BRACE_PIECES: Final = re.compile(r"([{},])")
_BACKTICK_ESCAPES: Final = re.compile(r"\\([\\`$])")
_BACKTICK_ESCAPES_QUOTED: Final = re.compile(r'\\([\\`$"])')
_ANSI_ESCAPE: Final = re.compile(
    r"\\(?:x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_SIMPLE: Final = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
# A token of a $(( … )) body, for telling an arithmetic expansion from a substitution of a subshell.
_ARITHMETIC_AHEAD: Final = re.compile(
    r"""[^()'"\\`]+|'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*"|\\.|`[^`]*`|[()]""", re.DOTALL
)


class _Problem(Exception):
    """Text outside the grammar (``why``), or nesting too deep to read (``too_deep``)."""

    def __init__(self, why: str, *, too_deep: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.too_deep = too_deep


class _NotArithmetic(Exception):
    """``$((`` or ``((`` that turns out to open a subshell."""


def _decode_ansi_c(escape: re.Match[str]) -> str:
    text = escape.group()
    kind = text[1]
    simple = _ANSI_SIMPLE.get(kind)
    if simple is not None and len(text) == 2:
        return simple
    if kind in "xuU" and len(text) > 2:
        value = int(text[2:], 16)
    elif kind in "01234567":
        value = int(text[1:], 8)
    elif kind == "c" and len(text) == 3:
        value = ord(text[2]) & 0x1F
    else:
        return text  # an escape bash does not know stays as written
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return "\ufffd"
    return chr(value)


_PLAIN_WORDS: dict[str, Word] = {}
_PLAIN_WORDS_LIMIT: Final = 4096


def plain_word(text: str) -> Word:
    """The word of plain text ``text``; the common ones are shared (words are values)."""
    word = _PLAIN_WORDS.get(text)
    if word is None:
        word = Word(text, (Literal(text),))
        if len(text) <= 64:
            if len(_PLAIN_WORDS) >= _PLAIN_WORDS_LIMIT:
                _PLAIN_WORDS.clear()
            _PLAIN_WORDS[text] = word
    return word


def _heredoc_delimiter(word: Word) -> tuple[str, bool]:
    """A heredoc's delimiter as bash compares it (quotes removed, nothing expanded) and whether any part of
    it was quoted (then the body is taken literally)."""
    pieces: list[str] = []
    quoted = False
    for part in word.parts:
        if isinstance(part, Literal | Glob | Tilde):
            pieces.append(part.text)
        elif isinstance(part, Escaped):
            quoted = True
            pieces.append(part.char)
        elif isinstance(part, SingleQuoted):
            quoted = True
            pieces.append(part.text)
        elif isinstance(part, AnsiCQuoted):
            quoted = True
            pieces.append(part.value)
        elif isinstance(part, DoubleQuoted):
            quoted = True
            pieces.extend(
                inner.char if isinstance(inner, Escaped) else _source_text(inner) for inner in part.parts
            )
        else:
            pieces.append(_source_text(part))
    return "".join(pieces), quoted


def _source_text(part: Part) -> str:
    """The text ``part`` was written as, where the node keeps it."""
    if isinstance(part, Literal | Glob | Tilde):
        return part.text
    if isinstance(part, Escaped):
        return "\\" + (part.char or "\n")
    if isinstance(part, SingleQuoted):
        return f"'{part.text}'"
    if isinstance(part, AnsiCQuoted):
        return f"$'{part.text}'"
    return part.text


@final
class _Parser:
    """Reads one text; ``depth`` is how deeply this text is nested in the command being read."""

    __slots__ = ("comments", "depth", "pending", "text", "tokens")

    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.tokens = Tokenizer(text)
        self.depth = depth
        # Heredocs whose bodies start after the next newline token: (node, delimiter, quoted, strip_tabs).
        self.pending: list[tuple[Redirection, str, bool, bool]] = []
        self.comments = 0

    def problem(self, why: str) -> _Problem:
        return _Problem(why)

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Problem("commands nested too deeply to read", too_deep=True)

    # -- scripts and lists --------------------------------------------------------------------------------

    def parse_script(self) -> CommandList:
        """script := linebreak [and_or (separator linebreak and_or)* [separator]] linebreak EOF

        A syntax error ends the script: the text from the start of the and-or list it is in to the end of
        the script becomes a ``NotUnderstood`` node (bash runs nothing of a line it cannot parse, and a
        non-interactive bash stops there).
        """
        tokens = self.tokens
        text = self.text
        items: list[AndOr] = []
        separators: list[str] = []
        while True:
            start = tokens.position
            try:
                self._parse_linebreak()
                if tokens.at_end:
                    break
                start = tokens.position
                item = self._parse_and_or()
                separator = self._parse_separator()
            except _Problem as problem:
                unread = NotUnderstood(text[start:], problem.why, problem.too_deep)
                items.append(AndOr((Pipeline((unread,)),)))
                separators.append("")
                self.pending = []
                break
            items.append(item)
            separators.append(separator)
            if not separator:
                break
        return CommandList(tuple(items), tuple(separators), text, self.comments)

    def _parse_separator(self) -> str:
        """separator := ';' | '&' | newline | EOF (with a comment before a newline)"""
        tokens = self.tokens
        tokens.skip_blanks()
        char = tokens.char()
        if not char:
            return ""
        if char == "#":
            self._parse_comment()
            char = tokens.char()
            if not char:
                return ""
        if char == "\n":
            self._parse_newline()
            return "\n"
        if char == ";":
            if tokens.startswith((";;", ";&")):
                operator = tokens.take("CONTROL")
                assert operator is not None
                raise self.problem(f"the case operator {operator.group()!r} outside a case")
            tokens.position += 1
            return ";"
        if char == "&":
            tokens.position += 1
            return "&"
        if char == ")":
            raise self.problem("an unbalanced ')'")
        raise self.problem(f"an unexpected {char!r}")

    def _parse_comment(self) -> None:
        """comment := '#' (any character but newline)*"""
        self.tokens.take("COMMENT")
        self.comments += 1

    def _parse_newline(self) -> None:
        """newline := '\\n' heredoc_body*  (the bodies of the line's heredocs follow its newline)"""
        self.tokens.position += 1
        if self.pending:
            self._parse_heredoc_bodies()

    def _parse_linebreak(self) -> None:
        """linebreak := (blank | comment | newline)*"""
        tokens = self.tokens
        while True:
            tokens.skip_blanks()
            char = tokens.char()
            if char == "\n":
                self._parse_newline()
            elif char == "#":
                self._parse_comment()
            else:
                return

    def _parse_compound_list(
        self,
        stops: frozenset[str],
        *,
        closer: bool = False,
        case_arm: bool = False,
        empty: bool = False,
        what: str = "",
    ) -> CommandList:
        """compound_list := linebreak and_or ((';' | '&' | newline) linebreak and_or)* [separator] linebreak

        It ends before a keyword of ``stops`` where a command would start, before ``)`` (``closer``), or
        before a case arm's terminator (``case_arm``); ``empty`` allows no command at all.
        """
        self.deeper()
        tokens = self.tokens
        start = tokens.position
        items: list[AndOr] = []
        separators: list[str] = []
        comments = self.comments
        while True:
            self._parse_linebreak()
            if self._at_stop(stops, closer, case_arm):
                break
            items.append(self._parse_and_or())
            separator = self._parse_list_separator()
            separators.append(separator)
            if not separator:
                self._parse_linebreak()
                if not self._at_stop(stops, closer, case_arm):
                    raise self._unexpected(what)
                break
        if not items and not empty:
            raise self.problem(f"an empty command list in {what}" if what else "an empty command list")
        self.depth -= 1
        return CommandList(
            tuple(items), tuple(separators), self.text[start : tokens.position], self.comments - comments
        )

    def _unexpected(self, what: str) -> _Problem:
        tokens = self.tokens
        if tokens.at_end:
            return self.problem(f"an unclosed {what}" if what else "an unexpected end")
        if tokens.char() == ")":
            return self.problem("an unbalanced ')'")
        if tokens.startswith((";;", ";&")):
            return self.problem("the case operator outside a case")
        return self.problem(f"an unexpected {tokens.char()!r}")

    def _parse_list_separator(self) -> str:
        """list_separator := ';' | '&' | newline  (not a case arm's ';;', ';&' or ';;&')"""
        tokens = self.tokens
        tokens.skip_blanks()
        char = tokens.char()
        if char == "#":
            self._parse_comment()
            char = tokens.char()
        if char == "\n":
            self._parse_newline()
            return "\n"
        if char == ";" and not (tokens.startswith((";;", ";&"))):
            tokens.position += 1
            return ";"
        if char == "&":
            tokens.position += 1
            return "&"
        return ""

    def _at_stop(self, stops: frozenset[str], closer: bool, case_arm: bool) -> bool:
        tokens = self.tokens
        char = tokens.char()
        if not char:
            return True
        if char == ")":
            return closer
        if char == ";":
            return case_arm and (tokens.startswith((";;", ";&")))
        return bool(stops) and tokens.reserved() in stops

    def _parse_and_or(self) -> AndOr:
        """and_or := pipeline (('&&' | '||') linebreak pipeline)*"""
        tokens = self.tokens
        pipelines = [self._parse_pipeline("")]
        operators: list[str] = []
        while True:
            tokens.skip_blanks()
            if tokens.startswith(("&&", "||")):
                operator = tokens.text[tokens.position : tokens.position + 2]
                tokens.position += 2
                self._parse_linebreak()
                operators.append(operator)
                pipelines.append(self._parse_pipeline(operator))
            else:
                break
        return AndOr(tuple(pipelines), tuple(operators))

    def _parse_pipeline(self, after: str) -> Pipeline:
        """pipeline := ('!' | 'time' ['-p'])* [command (('|' | '|&') linebreak command)*]"""
        tokens = self.tokens
        negated = timed = posix = False
        while True:
            tokens.skip_blanks()
            keyword = tokens.reserved()
            if keyword == "!":
                negated = not negated
                tokens.position += 1
            elif keyword == "time":
                timed = True
                tokens.position += 4
                tokens.skip_blanks()
                if tokens.take("TIME_POSIX") is not None:
                    posix = True
            else:
                break
        if negated or timed:
            tokens.skip_blanks()
            char = tokens.char()
            if not char or char in "\n;)" or (char == "&" and not tokens.startswith("&>")):
                return Pipeline((), (), negated, timed, posix)  # bash accepts a bare `!` or `time`
        commands = [self._parse_command(after)]
        operators: list[str] = []
        while True:
            tokens.skip_blanks()
            if tokens.startswith("|&"):
                operator = "|&"
            elif tokens.char() == "|" and not tokens.startswith("||"):
                operator = "|"
            else:
                break
            tokens.position += len(operator)
            self._parse_linebreak()
            operators.append(operator)
            commands.append(self._parse_command(operator))
        return Pipeline(tuple(commands), tuple(operators), negated, timed, posix)

    # -- commands -----------------------------------------------------------------------------------------

    def _parse_command(self, after: str) -> Command:
        """command := compound_command redirection* | function_definition | coproc | simple_command"""
        tokens = self.tokens
        tokens.skip_blanks()
        char = tokens.char()
        if not char or char in "\n;|)" or (char == "&" and not tokens.startswith("&>")):
            raise self._no_command(after)
        if char == "(":
            if tokens.startswith("(("):
                start = tokens.position
                depth = self.depth
                try:
                    expression = self._parse_arithmetic_command()
                except _NotArithmetic:
                    tokens.position = start
                    self.depth = depth
                else:
                    return ArithmeticCommand(expression, self._parse_redirections())
            return self._parse_subshell()
        keyword = tokens.reserved()
        if keyword is not None:
            if keyword in _OUT_OF_PLACE:
                raise self.problem(f"the shell keyword {keyword!r} out of place")
            if keyword in ("!", "time"):
                raise self.problem(f"the shell keyword {keyword!r} inside a pipeline")
            tokens.position += len(keyword)
            return self._parse_keyword_command(keyword)
        return self._parse_simple_command()

    def _no_command(self, after: str) -> _Problem:
        tokens = self.tokens
        if tokens.at_end:
            if after:
                return self.problem(f"a trailing operator {after!r}")
            return self.problem("no command")
        char = tokens.char()
        if char == ")":
            return self.problem("an unbalanced ')'")
        operator = tokens.peek("CONTROL")
        shown = operator.group() if operator is not None else char
        if shown in (";;", ";&", ";;&"):
            return self.problem(f"the case operator {shown!r} outside a case")
        if after:
            return self.problem(f"an operator {shown!r} right after {after!r}")
        return self.problem(f"an operator {shown!r} with no command before it")

    def _parse_keyword_command(self, keyword: str) -> Command:
        if keyword == "if":
            return self._parse_if()
        if keyword in ("while", "until"):
            return self._parse_loop(until=keyword == "until")
        if keyword in ("for", "select"):
            return self._parse_for(select=keyword == "select")
        if keyword == "case":
            return self._parse_case()
        if keyword == "{":
            return self._parse_group()
        if keyword == "[[":
            return self._parse_test()
        if keyword == "function":
            return self._parse_function_keyword()
        assert keyword == "coproc", keyword
        return self._parse_coproc()

    def _expect_keyword(self, keyword: str, what: str) -> None:
        tokens = self.tokens
        tokens.skip_blanks()
        reserved = tokens.peek("RESERVED") if keyword != "in" else tokens.peek("IN")
        if reserved is None or reserved.group() != keyword:
            if tokens.at_end:
                raise self.problem(f"an unclosed {what} (no {keyword!r})")
            raise self.problem(f"{what} without {keyword!r}")
        tokens.position = reserved.end()

    def _parse_subshell(self) -> Subshell:
        """subshell := '(' compound_list ')' redirection*"""
        tokens = self.tokens
        tokens.position += 1
        body = self._parse_compound_list(frozenset(), closer=True, what="subshell ( … )")
        if tokens.char() != ")":
            raise self.problem("an unclosed subshell ( … )")
        tokens.position += 1
        return Subshell(body, self._parse_redirections())

    def _parse_group(self) -> Group:
        """group := '{' compound_list '}' redirection*"""
        body = self._parse_compound_list(frozenset({"}"}), what="command group { … }")
        self._expect_keyword("}", "command group { … }")
        return Group(body, self._parse_redirections())

    def _parse_if(self) -> IfCommand:
        """if := 'if' compound_list 'then' compound_list ('elif' compound_list 'then' compound_list)*
        ['else' compound_list] 'fi' redirection*"""
        tokens = self.tokens
        clauses: list[tuple[CommandList, CommandList]] = []
        otherwise: CommandList | None = None
        while True:
            condition = self._parse_compound_list(frozenset({"then"}), what="if")
            self._expect_keyword("then", "if")
            body = self._parse_compound_list(frozenset({"elif", "else", "fi"}), what="if")
            clauses.append((condition, body))
            reserved = tokens.peek("RESERVED")
            keyword = reserved.group() if reserved is not None else ""
            if keyword == "elif":
                tokens.position = reserved.end()  # type: ignore[union-attr]  # matched above
                continue
            if keyword == "else":
                tokens.position = reserved.end()  # type: ignore[union-attr]  # matched above
                otherwise = self._parse_compound_list(frozenset({"fi"}), what="if")
            self._expect_keyword("fi", "if")
            break
        return IfCommand(tuple(clauses), otherwise, self._parse_redirections())

    def _parse_loop(self, *, until: bool) -> Loop:
        """loop := ('while' | 'until') compound_list 'do' compound_list 'done' redirection*"""
        what = "until" if until else "while"
        condition = self._parse_compound_list(frozenset({"do"}), what=what)
        self._expect_keyword("do", what)
        body = self._parse_compound_list(frozenset({"done"}), what=what)
        self._expect_keyword("done", what)
        return Loop(condition, body, until, self._parse_redirections())

    def _parse_for(self, *, select: bool) -> ForLoop | ArithmeticFor:
        """for := ('for' | 'select') name linebreak ['in' word* (';' | newline)] linebreak do_group
        | 'for' '((' arithmetic ';' arithmetic ';' arithmetic '))' [';'] linebreak do_group
        do_group := 'do' compound_list 'done' | '{' compound_list '}'"""
        tokens = self.tokens
        what = "select" if select else "for"
        tokens.skip_blanks()
        if not select and tokens.startswith("(("):
            clauses = self._parse_arithmetic_clauses()
            tokens.skip_blanks()
            if tokens.char() == ";":
                tokens.position += 1
            self._parse_linebreak()
            return ArithmeticFor(clauses, self._parse_do_group(what), self._parse_redirections())
        name = tokens.take("NAME")
        if name is None or not tokens.at_word_end():
            raise self.problem(f"{what} without a variable name")
        self._parse_linebreak()
        words: tuple[Word, ...] | None = None
        if tokens.take("IN") is not None:
            found: list[Word] = []
            while True:
                tokens.skip_blanks()
                char = tokens.char()
                if not char or char in "\n;":
                    break
                if char == "#":
                    self._parse_comment()
                    continue
                if char in "&|<>()":
                    raise self.problem(f"an unexpected {char!r} in the words of {what}")
                found.append(self._parse_word())
            words = tuple(found)
            if tokens.char() == ";":
                tokens.position += 1
            elif tokens.char() == "\n":
                self._parse_newline()
        elif tokens.char() == ";":
            tokens.position += 1
        self._parse_linebreak()
        body = self._parse_do_group(what)
        return ForLoop(name.group(), words, body, select, self._parse_redirections())

    def _parse_do_group(self, what: str) -> CommandList:
        tokens = self.tokens
        tokens.skip_blanks()
        if tokens.take("DO") is not None:
            body = self._parse_compound_list(frozenset({"done"}), what=what)
            self._expect_keyword("done", what)
            return body
        reserved = tokens.peek("RESERVED")
        if reserved is not None and reserved.group() == "{":
            tokens.position = reserved.end()
            body = self._parse_compound_list(frozenset({"}"}), what=what)
            self._expect_keyword("}", what)
            return body
        raise self.problem(f"{what} without 'do'")

    def _parse_case(self) -> Case:
        """case := 'case' word linebreak 'in' linebreak (case_arm)* 'esac' redirection*
        case_arm := ['('] word ('|' word)* ')' compound_list? [';;' | ';&' | ';;&'] linebreak"""
        tokens = self.tokens
        tokens.skip_blanks()
        if tokens.at_word_end():
            raise self.problem("case without a word")
        subject = self._parse_word()
        self._parse_linebreak()
        self._expect_keyword("in", "case")
        arms: list[CaseArm] = []
        self.deeper()
        while True:
            self._parse_linebreak()
            reserved = tokens.peek("RESERVED")
            if reserved is not None and reserved.group() == "esac":
                tokens.position = reserved.end()
                break
            if tokens.at_end:
                raise self.problem("an unclosed case (no 'esac')")
            if tokens.char() == "(":
                tokens.position += 1
                tokens.skip_blanks()
            patterns = [self._parse_pattern()]
            while True:
                tokens.skip_blanks()
                if tokens.char() != "|":
                    break
                tokens.position += 1
                tokens.skip_blanks()
                patterns.append(self._parse_pattern())
            tokens.skip_blanks()
            if tokens.char() != ")":
                raise self.problem("a case pattern without ')'")
            tokens.position += 1
            body = self._parse_compound_list(frozenset({"esac"}), case_arm=True, empty=True, what="case")
            tokens.skip_blanks()
            terminator = tokens.peek("CONTROL")
            ending = ""
            if terminator is not None and terminator.group() in (";;", ";&", ";;&"):
                ending = terminator.group()
                tokens.position = terminator.end()
            arms.append(CaseArm(tuple(patterns), body if body.items else None, ending))
            if not ending:
                self._parse_linebreak()
                self._expect_keyword("esac", "case")
                break
        self.depth -= 1
        return Case(subject, tuple(arms), self._parse_redirections())

    def _parse_pattern(self) -> Word:
        tokens = self.tokens
        char = tokens.char()
        if not char or char in "\n;&|()<>":
            raise self.problem("a case pattern without a word")
        return self._parse_word()

    def _parse_test(self) -> TestCommand:
        """test := '[[' (word | '&&' | '||' | '!' | '(' | ')' | '<' | '>')* ']]' redirection*

        The word after ``=~`` is a regular expression, in which ``(``, ``)`` and ``|`` are text.
        """
        tokens = self.tokens
        words: list[Word] = []
        while True:
            tokens.skip_blanks()
            char = tokens.char()
            if not char:
                raise self.problem("an unclosed [[ … ]]")
            if char == "\n":
                self._parse_newline()
                continue
            if tokens.take("TEST_END") is not None:
                break
            if tokens.startswith(("&&", "||")):
                words.append(plain_word(char * 2))
                tokens.position += 2
                continue
            if char in "()<>":
                words.append(plain_word(char))
                tokens.position += 1
                continue
            if char in ";&|":
                raise self.problem(f"an unexpected {char!r} in [[ … ]]")
            if words and words[-1].text == "=~":
                words.append(self._parse_regex_word())
            else:
                words.append(self._parse_word())
        return TestCommand(tuple(words), self._parse_redirections())

    def _parse_regex_word(self) -> Word:
        """regex_word := (word_part | '(' | ')' | '|')+

        Parentheses nest; a blank outside them ends the word.
        """
        tokens = self.tokens
        text = self.text
        start = tokens.position
        parts: list[Part] = []
        depth = 0
        while not tokens.at_end:
            char = tokens.char()
            if char in "(|" or (char == ")" and depth):
                depth += {"(": 1, ")": -1}.get(char, 0)
                parts.append(Literal(char))
                tokens.position += 1
                continue
            if char in " \t\n" and depth:
                parts.append(Literal(char))
                tokens.position += 1
                continue
            if tokens.at_word_end():
                break
            word = self._parse_word()
            parts.extend(word.parts)
        if depth:
            raise self.problem("an unbalanced '(' in a [[ … =~ … ]] pattern")
        return Word(text[start : tokens.position], tuple(parts))

    def _parse_arithmetic_command(self) -> Arithmetic:
        """arithmetic_command := '((' arithmetic '))'"""
        if not _arithmetic_ahead(self.text, self.tokens.position + 2):
            raise _NotArithmetic
        self.tokens.position += 2
        return self._parse_arithmetic("))")

    def _parse_arithmetic_clauses(self) -> tuple[Arithmetic, Arithmetic, Arithmetic]:
        """'((' arithmetic ';' arithmetic ';' arithmetic '))'"""
        self.tokens.position += 2
        first = self._parse_arithmetic(";")
        second = self._parse_arithmetic(";")
        third = self._parse_arithmetic("))")
        return first, second, third

    def _parse_function_keyword(self) -> FunctionDefinition:
        """function_definition := 'function' word ['(' ')'] linebreak compound_command redirection*"""
        tokens = self.tokens
        start = tokens.position - len("function")
        tokens.skip_blanks()
        if tokens.at_word_end():
            raise self.problem("function without a name")
        name = self._parse_word()
        tokens.take("FUNCTION_PARENS")
        return self._parse_function_body(name.text, start, keyword=True)

    def _parse_function_body(self, name: str, start: int, *, keyword: bool) -> FunctionDefinition:
        self._parse_linebreak()
        body = self._parse_command("")
        if not isinstance(body, _COMPOUND):
            raise self.problem(f"the body of function {name!r} is not a compound command")
        return FunctionDefinition(name, body, self.text[start : self.tokens.position], keyword)

    def _parse_coproc(self) -> Coproc:
        """coproc := 'coproc' [name] compound_command | 'coproc' simple_command"""
        tokens = self.tokens
        tokens.skip_blanks()
        if self._at_compound():
            return Coproc(None, self._parse_command("coproc"))
        start = tokens.position
        name = tokens.take("NAME")
        if name is not None and tokens.at_word_end():
            tokens.skip_blanks()
            if self._at_compound():
                return Coproc(name.group(), self._parse_command("coproc"))
        tokens.position = start
        return Coproc(None, self._parse_simple_command())

    def _at_compound(self) -> bool:
        """Whether a compound command starts at the cursor."""
        tokens = self.tokens
        if tokens.char() == "(":
            return True
        reserved = tokens.peek("RESERVED")
        return reserved is not None and reserved.group() in _COMPOUND_KEYWORDS

    def _parse_redirections(self) -> tuple[Redirection, ...]:
        """redirection* after a compound command"""
        tokens = self.tokens
        found: list[Redirection] = []
        while True:
            tokens.skip_blanks()
            redirection = tokens.peek("REDIRECTION")
            if redirection is None:
                return tuple(found)
            found.append(self._parse_redirection(redirection))

    def _parse_simple_command(self) -> Command:
        """simple_command := (assignment | redirection)* (word | redirection)*
        function_definition := word '(' ')' linebreak compound_command redirection*"""
        tokens = self.tokens
        text = self.text
        size = len(text)
        start = tokens.position
        plain = RULES["PLAIN_COMMAND"].match(text, start)
        if plain is not None and RULES["PLAIN_COMMAND_END"].match(text, plain.end()) is not None:
            # Only plain words up to the end of the command: the same nodes as the loop below makes.
            found = plain.group()
            tokens.position = plain.end()
            return SimpleCommand(found, tuple(plain_word(word) for word in found.split()))
        end = start
        words: list[Word] = []
        assignments: list[Assignment] = []
        redirects: list[Redirection] = []
        while True:
            tokens.skip_blanks()
            position = tokens.position
            if position >= size:
                break
            char = text[position]
            if char in "\n;|)":
                break
            if char == "&" and not text.startswith("&>", position):
                break
            if char == "#":
                break  # a comment: the list reads it
            redirection = tokens.peek("REDIRECTION") if char in "<>0123456789{&" else None
            if redirection is not None:
                redirects.append(self._parse_redirection(redirection))
            elif char == "(":
                if len(words) == 1 and not (assignments or redirects) and tokens.take("FUNCTION_PARENS"):
                    return self._parse_function_body(words[0].text, start, keyword=False)
                raise self.problem("a '(' inside a command")
            else:
                assignment = (
                    tokens.peek("ASSIGNMENT") if not words or words[0].text in _DECLARATIONS else None
                )
                if assignment is None:
                    words.append(self._parse_word())
                elif not words:
                    assignments.append(self._parse_assignment(assignment))
                elif text.startswith("(", assignment.end()):
                    words.append(self._parse_array_argument(assignment))
                else:
                    words.append(self._parse_word())
            end = tokens.position
        if not (words or assignments or redirects):
            raise self._no_command("")
        return SimpleCommand(text[start:end], tuple(words), tuple(assignments), tuple(redirects))

    def _parse_assignment(self, assignment: re.Match[str]) -> Assignment:
        """assignment := name ['[' subscript ']'] ['+'] '=' (word | '(' array_element* ')' | nothing)"""
        tokens = self.tokens
        start = tokens.position
        tokens.position = assignment.end()
        name = assignment.group("name") + (assignment.group("subscript") or "")
        append = assignment.group("append") is not None
        if tokens.char() == "(":
            elements = self._parse_array()
            return Assignment(name, self.text[start : tokens.position], None, append, elements)
        if tokens.at_word_end():
            return Assignment(name, self.text[start : tokens.position], Word("", ()), append)
        value = self._parse_word()
        return Assignment(name, self.text[start : tokens.position], value, append)

    def _parse_array(self) -> tuple[Word, ...]:
        """array := '(' (linebreak word)* linebreak ')'"""
        tokens = self.tokens
        tokens.position += 1
        elements: list[Word] = []
        while True:
            self._parse_linebreak()
            char = tokens.char()
            if char == ")":
                tokens.position += 1
                return tuple(elements)
            if not char or char in ";&|(<>":
                raise self.problem("an unclosed array ( … )")
            elements.append(self._parse_word())

    def _parse_array_argument(self, assignment: re.Match[str]) -> Word:
        """A declaration's ``name=(…)`` argument, as one word whose parts are its elements' parts."""
        tokens = self.tokens
        start = tokens.position
        prefix = self.text[start : assignment.end()]
        tokens.position = assignment.end()
        elements = self._parse_array()
        parts: list[Part] = [Literal(prefix + "(")]
        for index, element in enumerate(elements):
            if index:
                parts.append(Literal(" "))
            parts.extend(element.parts)
        parts.append(Literal(")"))
        return Word(self.text[start : tokens.position], tuple(parts))

    def _parse_redirection(self, redirection: re.Match[str]) -> Redirection:
        """redirection := [number | '{' name '}'] operator word | [number] ('<<' | '<<-') word"""
        tokens = self.tokens
        start = tokens.position
        operator = redirection.group("operator")
        fd_text = redirection.group("fd")
        fd = int(fd_text) if fd_text is not None and len(fd_text) < 10 else None
        variable = redirection.group("variable")
        tokens.position = redirection.end()
        tokens.skip_blanks()
        substitution = tokens.char() in ("<", ">") and tokens.char(1) == "("
        if (tokens.at_word_end() and not substitution) or tokens.char() == "#":
            raise self.problem(f"a redirection {operator!r} with no target")
        target = self._parse_word()
        node = Redirection(operator, target, self.text[start : tokens.position], fd, variable)
        if operator in ("<<", "<<-"):
            delimiter, quoted = _heredoc_delimiter(target)
            self.pending.append((node, delimiter, quoted, operator == "<<-"))
        return node

    def _parse_heredoc_bodies(self) -> None:
        """heredoc_body := line* delimiter_line  (for each heredoc of the line just ended, in order)"""
        tokens = self.tokens
        text = self.text
        pending, self.pending = self.pending, []
        for node, delimiter, quoted, strip_tabs in pending:
            body, after, terminated = heredoc_body(
                text, tokens.position, delimiter, strip_tabs=strip_tabs, joins_lines=not quoted
            )
            parts: tuple[Part, ...] = ()
            if not quoted:
                parts = parse_heredoc_body(body, self.depth + 1)
            heredoc = Heredoc(delimiter, quoted, strip_tabs, body, parts, terminated)
            # Set once, before the parse ends and anyone sees the node (see the module docstring).
            object.__setattr__(node, "heredoc", heredoc)
            tokens.position = after

    # -- words --------------------------------------------------------------------------------------------

    def _parse_word(self) -> Word:
        """word := [tilde] word_part+  (up to a metacharacter, outside quotes and expansions)
        word_part := plain | '\\' char | single_quoted | double_quoted | ansi_c | locale | expansion
                   | backtick | process_substitution | glob | extglob"""
        tokens = self.tokens
        text = self.text
        size = len(text)
        start = tokens.position
        plain = RULES["PLAIN"].match(text, start)
        if plain is not None:
            end = plain.end()
            ends = end >= size or (text[end] in _WORD_END and text[end + 1 : end + 2] != "(")
            found = plain.group()
            if ends and found[0] != "~" and not ("{" in found and "}" in found):
                tokens.position = end
                return plain_word(found)
        parts: list[Part] = []
        spans: list[tuple[int, int]] = []  # where each part stands, for braces and extended globs
        position = self._parse_tilde(start, parts, spans)
        plain_text = RULES["PLAIN"]
        braces = False
        while position < size:
            plain = plain_text.match(text, position)
            if plain is not None:
                found = plain.group()
                braces = braces or "{" in found or "}" in found or "," in found
                if parts and type(parts[-1]) is Literal and spans[-1][1] == position:
                    parts[-1] = Literal(parts[-1].text + found)
                    spans[-1] = (spans[-1][0], plain.end())
                else:
                    parts.append(Literal(found))
                    spans.append((position, plain.end()))
                position = plain.end()
                continue
            tokens.position = position
            if text[position] == "(":
                operator = _extglob_operator(parts, spans, position)
                if operator is None:
                    break
                position = _take_operator(parts, spans)
                part: Part = self._parse_extglob(operator, position)
            else:
                found_part = self._parse_word_part(text[position])
                if found_part is None:
                    break
                part = found_part
            parts.append(part)
            spans.append((position, tokens.position))
            position = tokens.position
        tokens.position = position
        if position == start:
            raise self.problem(f"an unexpected {text[start : start + 1]!r}")
        if braces:
            parts = _brace_expansions(text, parts, spans)
        return Word(text[start:position], tuple(parts))

    def _parse_tilde(self, start: int, parts: list[Part], spans: list[tuple[int, int]]) -> int:
        """tilde := '~' [login name]  (before a '/' or the end of the word)

        Returns where the rest of the word starts.
        """
        text = self.text
        if not text.startswith("~", start):
            return start
        tilde = RULES["TILDE"].match(text, start)
        assert tilde is not None
        after = tilde.end()
        if after >= len(text) or text[after] == "/" or text[after] in _WORD_END:
            parts.append(Tilde(tilde.group()))
            spans.append((start, after))
            return after
        return start

    def _parse_word_part(self, char: str) -> Part | None:
        """One word part that is not plain text, starting with ``char`` at the cursor (``None``: the word
        ends here)."""
        tokens = self.tokens
        text = self.text
        position = tokens.position
        if char in _WORD_END:
            if char in "<>" and text.startswith("(", position + 1):
                return self._parse_process_substitution()
            return None
        if char == "'":
            return self._parse_single_quoted()
        if char == '"':
            return self._parse_double_quoted(locale=False)
        if char == "\\":
            if position + 1 >= len(text):
                tokens.position = position + 1
                return Literal("\\")  # bash keeps a backslash at the very end
            escaped = text[position + 1]
            tokens.position = position + 2
            return Escaped("" if escaped == "\n" else escaped)
        if char == "$":
            return self._parse_dollar(quoted=False)
        if char == "`":
            return self._parse_backtick(quoted=False)
        tokens.position = position + 1  # * ? [
        return Glob(char)

    def _parse_single_quoted(self) -> SingleQuoted:
        """single_quoted := "'" (any character but "'")* "'" """
        tokens = self.tokens
        found = RULES["SINGLE_QUOTED"].match(tokens.text, tokens.position)
        if found is None:
            raise self.problem("an unterminated ' quote")
        tokens.position = found.end()
        return SingleQuoted(found.group()[1:-1])

    def _parse_double_quoted(self, *, locale: bool) -> DoubleQuoted:
        """double_quoted := '"' (text | '\\' char | expansion | backtick)* '"'  (``$"…"`` when ``locale``)"""
        tokens = self.tokens
        text = self.text
        size = len(text)
        start = tokens.position - (1 if locale else 0)
        position = tokens.position + 1
        parts: list[Part] = []
        quoted_text = RULES["QUOTED_TEXT"]
        while position < size:
            run = quoted_text.match(text, position)
            if run is not None:
                parts.append(Literal(run.group()))
                position = run.end()
                continue
            char = text[position]
            if char == '"':
                tokens.position = position + 1
                return DoubleQuoted(tuple(parts), text[start : position + 1], locale)
            tokens.position = position
            if char == "\\":
                escaped = text[position + 1 : position + 2]
                if escaped and escaped in '$`"\\\n':
                    parts.append(Escaped("" if escaped == "\n" else escaped))
                    position += 2
                else:
                    parts.append(Literal("\\"))
                    position += 1
                continue
            if char == "$":
                parts.append(self._parse_dollar(quoted=True))
            else:
                parts.append(self._parse_backtick(quoted=True))
            position = tokens.position
        raise self.problem('an unterminated " quote')

    def _parse_dollar(self, *, quoted: bool) -> Part:
        """expansion := '$((' arithmetic '))' | '$(' compound_list ')' | '${' parameter '}'
        | '$[' arithmetic ']' | "$'" ansi_c "'" | '$"' double_quoted | '$' name | '$' special"""
        tokens = self.tokens
        text = self.text
        position = tokens.position
        following = text[position + 1 : position + 2]
        if following == "(":
            if text.startswith("((", position + 1) and _arithmetic_ahead(text, position + 3):
                tokens.position = position + 3
                depth = self.depth
                try:
                    expression = self._parse_arithmetic("))")
                except _NotArithmetic:
                    self.depth = depth  # bash reads it again as a substitution of a subshell
                else:
                    return Arithmetic(expression.parts, text[position : tokens.position])
            tokens.position = position + 2
            body = self._parse_nested_list()
            return CommandSubstitution(body, text[position : tokens.position])
        if following == "{":
            return self._parse_parameter(quoted)
        if following == "[":
            tokens.position = position + 2
            expression = self._parse_arithmetic("]")
            return Arithmetic(expression.parts, text[position : tokens.position])
        if following == "'" and not quoted:
            ansi = RULES["ANSI_C"].match(text, position)
            if ansi is None:
                raise self.problem("an unterminated $' quote")
            tokens.position = ansi.end()
            raw = ansi.group()[2:-1]
            return AnsiCQuoted(raw, _ANSI_ESCAPE.sub(_decode_ansi_c, raw))
        if following == '"' and not quoted:
            tokens.position = position + 1
            return self._parse_double_quoted(locale=True)
        name = RULES["NAME"].match(text, position + 1) or RULES["SPECIAL_PARAMETER"].match(text, position + 1)
        if name is not None:
            tokens.position = name.end()
            return Parameter(name.group(), text[position : name.end()])
        tokens.position = position + 1
        return Literal("$")

    def _parse_parameter(self, quoted: bool) -> Parameter:
        """parameter := '${' ['#' | '!'] (name | digits | special) ['[' word ']'] [operator word*] '}'"""
        self.deeper()
        tokens = self.tokens
        text = self.text
        start = tokens.position
        tokens.position += 2
        prefix = ""
        char = tokens.char()
        if char in "#!" and tokens.char(1) not in ("}", ""):
            following = tokens.char(1)
            if not (char == "#" and following in ":-=?+%/#" and tokens.char(2) != "}"):
                prefix = char
                tokens.position += 1
        name = tokens.take("NAME") or tokens.take("DIGITS") or tokens.take("SPECIAL_PARAMETER")
        if name is None:
            raise self.problem("a bad substitution ${ … }")
        subscript: Word | None = None
        if tokens.char() == "[":
            tokens.position += 1
            subscript = self._parse_parameter_word(quoted, "]")
            if tokens.char() != "]":
                raise self.problem("an unterminated ${ … [ … ]")
            tokens.position += 1
        operator: str | None = None
        words: list[Word] = []
        if prefix == "!" and tokens.char() in ("*", "@") and tokens.char(1) == "}":
            operator = tokens.char()
            tokens.position += 1
        elif tokens.char() != "}":
            found = tokens.take("PARAMETER_OPERATOR")
            if found is None:
                raise self.problem("a bad substitution ${ … }")
            operator = found.group()
            if operator.startswith("/"):
                words.append(self._parse_parameter_word(quoted, "/}"))
                if tokens.char() == "/":
                    tokens.position += 1
                    words.append(self._parse_parameter_word(quoted, "}"))
            elif operator == ":":
                words.append(self._parse_parameter_word(quoted, ":}"))
                if tokens.char() == ":":
                    tokens.position += 1
                    words.append(self._parse_parameter_word(quoted, "}"))
            else:
                words.append(self._parse_parameter_word(quoted, "}"))
        if tokens.char() != "}":
            raise self.problem("an unterminated ${")
        tokens.position += 1
        self.depth -= 1
        return Parameter(
            name.group(), text[start : tokens.position], True, prefix, subscript, operator, tuple(words)
        )

    def _parse_parameter_word(self, quoted: bool, stops: str) -> Word:
        """parameter_word := (text | '\\' char | quote | expansion | backtick | '{' parameter_word '}')*
        up to an unquoted character of ``stops`` (inside double quotes ``'`` is text)."""
        tokens = self.tokens
        text = self.text
        size = len(text)
        start = tokens.position
        parts: list[Part] = []
        braces = 0
        parameter_text = RULES["PARAMETER_TEXT"]
        while tokens.position < size:
            position = tokens.position
            char = text[position]
            if char in stops and not (char == "}" and braces):
                break
            if char == "\\":
                escaped = text[position + 1 : position + 2]
                if quoted and escaped not in '$`"\\\n}':
                    parts.append(Literal("\\"))
                    tokens.position += 1
                else:
                    parts.append(Escaped("" if escaped == "\n" else escaped))
                    tokens.position += 2
            elif char == "'" and not quoted:
                parts.append(self._parse_single_quoted())
            elif char == '"':
                parts.append(self._parse_double_quoted(locale=False))
            elif char == "$":
                parts.append(self._parse_dollar(quoted=quoted))
            elif char == "`":
                parts.append(self._parse_backtick(quoted=quoted))
            elif char in "{}":
                braces += 1 if char == "{" else -1  # braces nest inside ${ … }
                parts.append(Literal(char))
                tokens.position += 1
            else:
                run = parameter_text.match(text, position)
                piece = run.group() if run is not None else char
                parts.append(Literal(piece))
                tokens.position = position + len(piece)
        return Word(text[start : tokens.position], tuple(parts))

    def _parse_arithmetic(self, closer: str) -> Arithmetic:
        """arithmetic := (text | '(' arithmetic ')' | expansion | backtick | quote | '\\' char)*
        up to ``closer`` (``))``, ``]`` or ``;``) outside parentheses"""
        self.deeper()
        tokens = self.tokens
        text = self.text
        size = len(text)
        start = tokens.position
        parts: list[Part] = []
        depth = 0
        while True:
            position = tokens.position
            if position >= size:
                raise self.problem("an unterminated arithmetic expression")
            run = RULES["ARITHMETIC_TEXT"].match(text, position)
            if run is not None:
                piece = run.group()
                if closer == ";" and ";" in piece and depth == 0:
                    piece = piece[: piece.index(";")]
                    if piece:
                        parts.append(Literal(piece))
                    tokens.position = position + len(piece) + 1
                    break
                parts.append(Literal(piece))
                tokens.position = run.end()
                continue
            char = text[position]
            if char in "([":
                if char == "(" or closer == "]":
                    depth += 1
                parts.append(Literal(char))
                tokens.position += 1
            elif char in ")]":
                if depth == 0 and char == ")" and closer == "))":
                    if text.startswith("))", position):
                        tokens.position += 2
                        break
                    raise _NotArithmetic
                if depth == 0 and char == "]" and closer == "]":
                    tokens.position += 1
                    break
                if depth == 0 and char == ")":
                    raise self.problem("an unbalanced ')' in an arithmetic expression")
                if char == ")" or closer == "]":
                    depth -= 1
                parts.append(Literal(char))
                tokens.position += 1
            else:
                parts.append(self._parse_arithmetic_part(char))
        self.depth -= 1
        return Arithmetic(tuple(parts), text[start : tokens.position])

    def _parse_arithmetic_part(self, char: str) -> Part:
        """An expansion, backtick, quote or escape inside an arithmetic expression."""
        tokens = self.tokens
        text = self.text
        position = tokens.position
        if char == "$":
            return self._parse_dollar(quoted=True)
        if char == "`":
            return self._parse_backtick(quoted=True)
        if char == "'":
            return self._parse_single_quoted()
        if char == '"':
            return self._parse_double_quoted(locale=False)
        escaped = text[position + 1 : position + 2]  # a backslash
        tokens.position += 2
        return Escaped("" if escaped == "\n" else escaped)

    def _parse_nested_list(self) -> CommandList:
        """nested := compound_list ')'  (a substitution's commands; its heredocs end inside it)"""
        tokens = self.tokens
        outer, self.pending = self.pending, []
        body = self._parse_compound_list(frozenset(), closer=True, empty=True, what="$( … )")
        if tokens.char() != ")":
            raise self.problem("an unterminated $( … )")
        if self.pending:
            raise self.problem("a heredoc whose body is not inside its $( … )")
        tokens.position += 1
        self.pending = outer
        return body

    def _parse_process_substitution(self) -> ProcessSubstitution:
        """process_substitution := ('<(' | '>(') compound_list ')'"""
        tokens = self.tokens
        start = tokens.position
        direction: TypingLiteral["<", ">"] = "<" if tokens.char() == "<" else ">"
        tokens.position += 2
        body = self._parse_nested_list()
        return ProcessSubstitution(direction, body, self.text[start : tokens.position])

    def _parse_backtick(self, *, quoted: bool) -> CommandSubstitution:
        """backtick := '`' (char | '\\' char)* '`'  (the body, unescaped, is parsed as a script)"""
        tokens = self.tokens
        text = self.text
        start = tokens.position
        found = RULES["BACKTICK"].match(text, start)
        if found is None:
            raise self.problem("an unterminated `")
        tokens.position = found.end()
        escapes = _BACKTICK_ESCAPES_QUOTED if quoted else _BACKTICK_ESCAPES
        body = escapes.sub(r"\1", found.group()[1:-1])
        if self.depth + 1 > MAX_DEPTH:
            raise _Problem("commands nested too deeply to read", too_deep=True)
        inner = _Parser(body, self.depth + 1).parse_script()
        return CommandSubstitution(inner, found.group(), backtick=True)

    def _parse_extglob(self, operator: str, begin: int) -> ExtGlob:
        """extglob := ('@' | '*' | '+' | '?' | '!') '(' (pattern_text | '(' … ')' | quote | expansion)* ')'

        ``begin`` is where the operator character stands; the cursor is at the ``(``.
        """
        self.deeper()
        tokens = self.tokens
        text = self.text
        size = len(text)
        tokens.position += 1
        inner: list[Part] = []
        depth = 0
        while True:
            position = tokens.position
            if position >= size:
                raise self.problem(f"an unterminated {operator}( … )")
            char = text[position]
            if char == ")" and depth == 0:
                tokens.position += 1
                break
            if char in "()":
                depth += 1 if char == "(" else -1
                inner.append(Literal(char))
                tokens.position += 1
            elif char in " \t\n|&;<>":
                inner.append(Literal(char))
                tokens.position += 1
            else:
                inner.extend(self._parse_word().parts)
        self.depth -= 1
        return ExtGlob(operator, tuple(inner), text[begin : tokens.position])


def _extglob_operator(parts: list[Part], spans: list[tuple[int, int]], position: int) -> str | None:
    """The extended-glob operator right before ``(`` at ``position``, if the word's last part ends in one."""
    if not parts or spans[-1][1] != position:
        return None
    last = parts[-1]
    if isinstance(last, Glob) and last.text in "*?":
        return last.text
    if isinstance(last, Literal) and last.text and last.text[-1] in _EXTGLOB_OPERATORS:
        return last.text[-1]
    return None


def _take_operator(parts: list[Part], spans: list[tuple[int, int]]) -> int:
    """Take an extended glob's operator character off the end of the word's parts; return where it stood."""
    last = parts[-1]
    begin = spans[-1][1] - 1
    if isinstance(last, Literal) and len(last.text) > 1:
        parts[-1] = Literal(last.text[:-1])
        spans[-1] = (spans[-1][0], begin)
    else:
        parts.pop()
        spans.pop()
    return begin


def _arithmetic_ahead(text: str, position: int) -> bool:
    """Whether ``$((``/``((`` whose body starts at ``position`` is arithmetic: its first ``)`` that closes the
    inner parenthesis is followed at once by the one closing the outer (as bash decides it)."""
    depth = 2
    for token in _ARITHMETIC_AHEAD.finditer(text, position):
        piece = token.group()
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth -= 1
            if depth == 1:
                return text.startswith(")", token.end())
    return True


def _brace_expansions(text: str, parts: list[Part], spans: list[tuple[int, int]]) -> list[Part]:
    """The parts of a word with each unquoted ``{a,b}`` or ``{1..3}`` wrapped into a ``BraceExpansion``."""
    pieces: list[tuple[Part, int, int]] = []
    for part, (start, end) in zip(parts, spans, strict=True):
        if isinstance(part, Literal) and ("{" in part.text or "}" in part.text or "," in part.text):
            offset = start
            for piece in _BRACE_PIECES.split(part.text):
                if piece:
                    pieces.append((Literal(piece), offset, offset + len(piece)))
                    offset += len(piece)
        else:
            pieces.append((part, start, end))
    opened: list[tuple[int, bool]] = []  # index of each open brace, and whether a comma follows it
    spans_found: list[tuple[int, int]] = []
    for index, (piece, _, _) in enumerate(pieces):
        if not isinstance(piece, Literal):
            continue
        if piece.text == "{":
            opened.append((index, False))
        elif piece.text == "," and opened:
            opened[-1] = (opened[-1][0], True)
        elif piece.text == "}" and opened:
            begin, comma = opened.pop()
            between = pieces[begin + 1 : index]
            sequence = (
                len(between) == 1
                and isinstance(between[0][0], Literal)
                and _SEQUENCE.fullmatch(between[0][0].text) is not None
            )
            if comma or sequence:
                spans_found = [span for span in spans_found if not begin <= span[0] <= index]
                spans_found.append((begin, index))
    if not spans_found:
        return parts
    result: list[Part] = []
    cursor = 0
    for begin, end in sorted(spans_found):
        result.extend(piece for piece, _, _ in pieces[cursor:begin])
        inner = tuple(piece for piece, _, _ in pieces[begin : end + 1])
        result.append(BraceExpansion(inner, text[pieces[begin][1] : pieces[end][2]]))
        cursor = end + 1
    result.extend(piece for piece, _, _ in pieces[cursor:])
    merged: list[Part] = []
    for part in result:
        if merged and type(part) is Literal and type(merged[-1]) is Literal:
            merged[-1] = Literal(merged[-1].text + part.text)
        else:
            merged.append(part)
    return merged


def parse(text: str, depth: int = 0) -> CommandList:
    """The tree of a script; never raises: what the grammar does not cover is a ``NotUnderstood`` node."""
    return _Parser(text, depth).parse_script()


def parse_expansions(text: str, depth: int) -> tuple[Part, ...]:
    """The expansions and substitutions in ``text`` read as bash later expands a prompt or an unquoted
    heredoc body (``PS4='$(…)'``); ``()`` when they are not understood."""
    try:
        return parse_heredoc_body(text, depth)
    except _Problem:
        return ()


def parse_heredoc_body(body: str, depth: int) -> tuple[Part, ...]:
    """heredoc_text := (text | '\\' char | expansion | backtick)*  (an unquoted heredoc's body)

    Raises ``_Problem`` (caught by the parse it is part of) when an expansion in it is not understood.
    """
    parser = _Parser(body, depth)
    if depth > MAX_DEPTH:
        raise _Problem("commands nested too deeply to read", too_deep=True)
    tokens = parser.tokens
    size = len(body)
    parts: list[Part] = []
    heredoc_text = RULES["HEREDOC_TEXT"]
    escape = RULES["HEREDOC_ESCAPE"]
    while tokens.position < size:
        position = tokens.position
        run = heredoc_text.match(body, position)
        assert run is not None  # it matches the empty string
        if run.end() > position:
            # Text and escapes, as one literal of their value: \$, \`, \\ and a line continuation count.
            piece = run.group()
            parts.append(Literal(escape.sub(r"\1", piece) if "\\" in piece else piece))
            tokens.position = run.end()
            continue
        if body[position] == "\\":  # a backslash ending the body
            parts.append(Literal("\\"))
            tokens.position += 1
        elif body[position] == "$":
            parts.append(parser._parse_dollar(quoted=True))
        else:
            parts.append(parser._parse_backtick(quoted=True))
    return tuple(parts)
