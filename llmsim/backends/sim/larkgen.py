"""A string a custom tool's lark grammar accepts: the grammar turned into one regular expression (rules and
terminals inlined, recursion unrolled a few levels), which regexgen.py then samples within its budgets.

Tokens are joined with nothing between them, which a grammar that `%ignore`s whitespace also accepts as long as
adjacent tokens do not run together; a grammar whose every derivation recurses deeper than the unrolling, or that
cannot be read, gets None (the caller falls back as for an unreadable regex).
"""

from __future__ import annotations

import ast
import functools
import random
import re

from llmsim.backends.sim import regexgen

MAX_GRAMMAR = 20_000  # characters of a definition read at all
UNROLL = 3  # times one rule may appear inside itself
MAX_PATTERN = regexgen.MAX_PATTERN
COMMON = {  # lark's `%import common.X` terminals
    "WS": r"[ \t\f\r\n]+", "WS_INLINE": r"[ \t]+", "NEWLINE": r"\r?\n", "LF": r"\n", "CR": r"\r",
    "DIGIT": r"[0-9]", "HEXDIGIT": r"[0-9a-fA-F]", "INT": r"[0-9]+", "SIGNED_INT": r"[+-]?[0-9]+",
    "DECIMAL": r"[0-9]+\.[0-9]+", "NUMBER": r"[0-9]+(?:\.[0-9]+)?", "SIGNED_NUMBER": r"[+-]?[0-9]+(?:\.[0-9]+)?",
    "FLOAT": r"[0-9]+\.[0-9]+", "LETTER": r"[A-Za-z]", "LCASE_LETTER": r"[a-z]", "UCASE_LETTER": r"[A-Z]",
    "WORD": r"[A-Za-z]+", "CNAME": r"[A-Za-z_][A-Za-z0-9_]*", "ESCAPED_STRING": r'"[A-Za-z0-9 _.,-]*"',
    "_STRING_INNER": r"[A-Za-z0-9 _.,-]*", "SH_COMMENT": r"#[^\n]*", "CPP_COMMENT": r"//[^\n]*",
}
_DEFINITION = re.compile(r"^[?!]?(?P<name>[A-Za-z_]\w*)(?:\.-?\d+)?\s*:(?P<body>.*)$")
_TOKEN = re.compile(r'\s+|//[^\n]*|(?P<string>"(?:[^"\\]|\\.)*"i?)|(?P<regex>/(?:[^/\\\n]|\\.)+/[imslux]*)|'
                    r"(?P<range>\.\.)|(?P<alias>->\s*\w+)|(?P<name>[A-Za-z_]\w*)|(?P<number>\d+)|(?P<op>[|()\[\]?*+~])")


class Unreadable(Exception):
    pass


def generate(definition: str, rng: random.Random) -> str | None:
    """A string the grammar accepts, or None."""
    pattern = to_regex(definition)
    return None if pattern is None else regexgen.generate(pattern, rng)


def accepts(fmt: dict[str, object], text: str) -> bool:
    """Whether a custom tool's `format` takes `text` (a format that is no grammar, or one that cannot be read,
    takes anything)."""
    if fmt.get("type") != "grammar":
        return True
    definition = str(fmt.get("definition") or "")
    pattern = to_regex(definition) if fmt.get("syntax") == "lark" else definition
    try:
        return pattern is None or re.fullmatch(pattern, text) is not None
    except re.error:
        return True


@functools.lru_cache(maxsize=64)
def to_regex(definition: str) -> str | None:
    """The grammar's `start` rule as one Python regular expression, or None."""
    try:
        rules = _definitions(definition[:MAX_GRAMMAR])
        start = "start" if "start" in rules else next(iter(rules))
        pattern = _Inliner(rules).name(start, ())
    except (Unreadable, StopIteration, RecursionError, ValueError, SyntaxError):
        return None
    if pattern is None or len(pattern) > MAX_PATTERN:
        return None
    try:
        re.compile(pattern)
    except re.error:
        return None
    return pattern


def _definitions(text: str) -> dict[str, list[tuple[str, str]]]:
    """Each rule and terminal's tokens, continuation lines joined; `%import common.X` brings in X."""
    rules: dict[str, list[tuple[str, str]]] = {}
    current: list[str] | None = None
    bodies: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if stripped.startswith("%"):
            current = None
            match = re.match(r"%import\s+common\.(\w+)(?:\s*->\s*(\w+))?", stripped)
            if match and match.group(1) in COMMON:
                rules[match.group(2) or match.group(1)] = [("regex", "/" + COMMON[match.group(1)] + "/")]
            continue
        definition = _DEFINITION.match(stripped) if not line[:1].isspace() else None
        if definition:
            current = bodies.setdefault(definition.group("name"), [])
            current.append(definition.group("body"))
        elif current is not None:
            current.append(stripped)
        else:
            raise Unreadable(stripped)
    for name, body in bodies.items():
        rules[name] = _tokens(" ".join(body))
    if not rules:
        raise Unreadable("empty")
    return rules


def _tokens(body: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    while position < len(body):
        match = _TOKEN.match(body, position)
        if match is None:
            raise Unreadable(body[position:position + 20])
        position = match.end()
        kind = match.lastgroup
        if kind and kind != "alias":
            out.append((kind, match.group()))
    return out


class _Inliner:
    def __init__(self, rules: dict[str, list[tuple[str, str]]]) -> None:
        self.rules = rules

    def name(self, name: str, stack: tuple[str, ...]) -> str | None:
        if name in COMMON and name not in self.rules:
            return COMMON[name]
        if name not in self.rules:
            raise Unreadable(name)
        if stack.count(name) >= UNROLL:
            return None
        tokens = self.rules[name]
        pattern, end = self._alternatives(tokens, 0, (*stack, name))
        if end != len(tokens):
            raise Unreadable(name)
        return pattern

    def _alternatives(self, tokens: list[tuple[str, str]], i: int, stack: tuple[str, ...]) -> tuple[str | None, int]:
        options: list[str] = []
        while True:
            sequence, i = self._sequence(tokens, i, stack)
            if sequence is not None:
                options.append(sequence)
            if i < len(tokens) and tokens[i] == ("op", "|"):
                i += 1
                continue
            break
        if not options:
            return None, i
        return (options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"), i

    def _sequence(self, tokens: list[tuple[str, str]], i: int, stack: tuple[str, ...]) -> tuple[str | None, int]:
        parts: list[str] = []
        dead = False
        while i < len(tokens) and tokens[i] not in (("op", "|"), ("op", ")"), ("op", "]")):
            item, i = self._item(tokens, i, stack)
            if item is None:
                dead = True
            else:
                parts.append(item)
        return (None if dead else "".join(parts)), i

    def _item(self, tokens: list[tuple[str, str]], i: int, stack: tuple[str, ...]) -> tuple[str | None, int]:
        kind, text = tokens[i]
        i += 1
        atom: str | None
        if (kind, text) in (("op", "("), ("op", "[")):
            atom, i = self._alternatives(tokens, i, stack)
            closing = ")" if text == "(" else "]"
            if i >= len(tokens) or tokens[i] != ("op", closing):
                raise Unreadable("unclosed group")
            i += 1
            if text == "[":
                return ("(?:" + atom + ")?" if atom is not None else ""), i
        elif kind == "string":
            literal = _literal(text)
            if i + 1 < len(tokens) and tokens[i][0] == "range" and tokens[i + 1][0] == "string":
                high = _literal(tokens[i + 1][1])
                atom, i = f"[{re.escape(literal)}-{re.escape(high)}]", i + 2
            else:
                atom = re.escape(literal)
                atom = f"(?i:{atom})" if text.endswith("i") and not text.endswith('"') else atom
        elif kind == "regex":
            body, flags = text[1:].rsplit("/", 1)
            flags = "".join(f for f in flags if f in "imsx")
            atom = f"(?{flags}:{body})" if flags else f"(?:{body})"
        elif kind == "name":
            atom = self.name(text, stack)
        else:
            raise Unreadable(text)
        if i < len(tokens) and tokens[i][0] == "op" and tokens[i][1] in "?*+":
            op = tokens[i][1]
            i += 1
            if atom is None:
                return ("" if op in "?*" else None), i
            return f"(?:{atom}){op}", i
        if i < len(tokens) and tokens[i] == ("op", "~"):
            least = int(tokens[i + 1][1])
            i += 2
            most = least
            if i + 1 < len(tokens) and tokens[i][0] == "range":
                most, i = int(tokens[i + 1][1]), i + 2
            return (None if atom is None else f"(?:{atom}){{{least},{most}}}"), i
        return atom, i


def _literal(text: str) -> str:
    quoted = text[:-1] if text.endswith("i") else text
    value = ast.literal_eval(quoted)
    if not isinstance(value, str):
        raise Unreadable(text)
    return value
