"""A string matching a regular expression, made within a budget of characters and steps, whatever the pattern.

A request controls its schema's `pattern`, so generation must be bounded: rstr expanded `((a{100}){100}){100}` to
a million characters in 7-35 s of one worker's time, holding every other request of that worker. Here the
pattern is parsed by Python's own regex parser (so it reads exactly what `re` reads), compiled once into a small
tree that knows each part's shortest match, and walked with two budgets. Each part gets only the room left after
the least the parts after it need, so repeats are capped to what fits: a shorter string that still matches
whenever one exists. A pattern whose shortest match is longer than the budget gets a string cut to the budget, as
a model stops at its output limit; one that needs more steps than the budget, or that Python cannot parse, gets
None.
"""

from __future__ import annotations

import functools
import random
import re
import string
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from re import _constants as sre  # type: ignore[attr-defined]  # Python's own parser: reads what `re` reads
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

MAX_LENGTH = 10_000  # characters in one generated string
MAX_STEPS = 20_000  # tree nodes compiled and visited, and characters made, for one string: a few ms
MAX_PATTERN = 10_000  # characters of a pattern read at all
OPEN_EXTRA = 6  # iterations beyond the minimum for an open-ended repeat (`*`, `+`, `{n,}`)
BOUNDED_EXTRA = 24  # ... and at most this many for a bounded one (`{2,500}`)
EMPTY_REPEAT = 2  # iterations of a repeated part that may match empty (`(a?){1000}` needs none)
ENUMERATED = 4096  # a class's ranges are listed whole up to this many characters, else sampled
SCANNED = 0x3000  # code points looked through for a class the alphabet has nothing of (`[^\x00-\x7f]`)
ALPHABET = string.ascii_letters + string.digits + " _-.,:;!?@#$%&*+=/()[]{}<>'\""
HUGE = 10**12  # shortest lengths are counted up to this (a{10**9}{10**9} stays an int of a sane size)
REPEATS = tuple(getattr(sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(sre, name))
ATOMIC = getattr(sre, "ATOMIC_GROUP", None)


class OverBudget(Exception):
    """More steps than the budget allows."""


@dataclass
class Node:
    """A compiled part: `kind` one of char, seq, branch, group, repeat, ref, exists, empty; `least` its shortest
    match."""

    kind: str
    least: int = 0
    pool: str = ""  # char: the characters it may be
    parts: list[Node] = field(default_factory=list)  # seq: in order; branch: the alternatives; exists: yes, no
    group: int | None = None  # group, ref, exists
    low: int = 0  # repeat
    high: int = 0


def generate(pattern: str, rng: random.Random, max_length: int = MAX_LENGTH, max_steps: int = MAX_STEPS
             ) -> str | None:
    """A string matching `pattern` of at most `max_length` characters (cut to it when no match is that short),
    or None when the pattern does not parse, is longer than MAX_PATTERN, or needs more than `max_steps`."""
    if len(pattern) > MAX_PATTERN:
        return None
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: the pattern's author's concern
            warnings.simplefilter("ignore")
            tree = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    walker = _Walker(rng, max_steps)
    try:
        return walker.walk(walker.compile(list(tree)), max_length)
    except (OverBudget, RecursionError):
        return None


class _Walker:
    def __init__(self, rng: random.Random, steps: int) -> None:
        self.rng = rng
        self.steps = steps
        self.groups: dict[int, str] = {}

    def _spend(self, steps: int = 1) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise OverBudget

    # compiling: re's parse tree into Nodes, each with its shortest match

    def compile(self, items: list[tuple[Any, Any]]) -> Node:
        parts = [self._compile(op, arg) for op, arg in items]
        parts = [part for part in parts if part.kind != "empty"]
        if len(parts) == 1:
            return parts[0]
        return Node("seq", min(HUGE, sum(part.least for part in parts)), parts=parts)

    def _compile(self, op: Any, arg: Any) -> Node:
        self._spend()
        if op is sre.LITERAL:
            return Node("char", 1, pool=chr(arg))
        if op is sre.NOT_LITERAL:
            return Node("char", 1, pool=self._pool(lambda ch: ord(ch) != arg))
        if op is sre.ANY:
            return Node("char", 1, pool=ALPHABET)
        if op is sre.IN:
            return Node("char", 1, pool=self._class(list(arg)))
        if op is sre.CATEGORY:
            return Node("char", 1, pool=self._class([(op, arg)]))
        if op is sre.BRANCH:
            branches = [self.compile(list(branch)) for branch in arg[1]]
            return Node("branch", min(branch.least for branch in branches), parts=branches)
        if op is sre.SUBPATTERN or op is ATOMIC:
            inner = self.compile(list(arg[3] if op is sre.SUBPATTERN else arg))
            group = arg[0] if op is sre.SUBPATTERN else None
            return Node("group", inner.least, parts=[inner], group=group)
        if op in REPEATS:
            low, high, sub = arg
            inner = self.compile(list(sub))
            return Node("repeat", min(HUGE, low * inner.least), parts=[inner], low=low, high=high)
        if op is sre.GROUPREF:
            return Node("ref", group=arg)
        if op is sre.GROUPREF_EXISTS:
            group, yes, no = arg
            branches = [self.compile(list(yes)), self.compile(list(no)) if no is not None else Node("empty")]
            return Node("exists", min(branch.least for branch in branches), parts=branches, group=group)
        return Node("empty")  # anchors and lookarounds take no characters

    def _class(self, members: list[tuple[Any, Any]]) -> str:
        """The characters of a class (`[a-z0-9]`, `[^"]`, `\\d`) to draw from: all of them, or a sample of its
        large ranges."""
        if members and members[0][0] is sre.NEGATE:
            return self._pool(lambda ch: not _member(ch, members[1:]))
        pool: list[str] = []
        for op, arg in members:
            if op is sre.LITERAL:
                pool.append(chr(arg))
            elif op is sre.RANGE:
                low, high = arg
                codes = range(low, high + 1) if high - low < ENUMERATED else \
                    [self.rng.randint(low, high) for _ in range(64)]
                self._spend(len(codes))
                pool.extend(chr(code) for code in codes)
            elif op is sre.CATEGORY:
                pool.append(self._pool(functools.partial(_category, category=arg)))
        return "".join(pool) or self._pool(lambda ch: _member(ch, members))

    def _pool(self, accepts: Callable[[str], bool]) -> str:
        """The alphabet's characters that `accepts`, else the first code point past it that does."""
        found = "".join(ch for ch in ALPHABET if accepts(ch))
        if not found:
            self._spend(SCANNED // 16)
            found = next((chr(code) for code in range(0x80, SCANNED) if accepts(chr(code))), "")
        if not found:
            raise OverBudget
        return found

    # walking: a string in at most `room` characters

    def walk(self, node: Node, room: int) -> str:
        self._spend()
        kind = node.kind
        if kind == "char":
            return self.rng.choice(node.pool) if room else ""
        if kind == "seq":
            return self._sequence(node, room)
        if kind == "branch":
            fitting = [b for b in node.parts if b.least <= room] or [min(node.parts, key=lambda b: b.least)]
            return self.walk(self.rng.choice(fitting), room)
        if kind == "group":
            text = self.walk(node.parts[0], room)
            if node.group is not None:
                self.groups[node.group] = text
            return text
        if kind == "repeat":
            return self._repeat(node, room)
        if kind == "ref":
            return self.groups.get(node.group or 0, "")[:room]
        if kind == "exists":
            return self.walk(node.parts[0] if node.group in self.groups else node.parts[1], room)
        return ""

    def _sequence(self, node: Node, room: int) -> str:
        """The parts one after another, each leaving the least the parts after it need."""
        after = node.least
        out: list[str] = []
        used = 0
        for part in node.parts:
            after -= part.least
            text = self.walk(part, max(0, room - used - after))
            out.append(text)
            used += len(text)
        return "".join(out)

    def _repeat(self, node: Node, room: int) -> str:
        inner, low, high = node.parts[0], node.low, node.high
        each = inner.least
        if each == 0:  # an empty iteration matches too, so none are needed: a few at most
            count = self.rng.randint(0, min(high, EMPTY_REPEAT))
        else:
            extra = OPEN_EXTRA if high == sre.MAXREPEAT else BOUNDED_EXTRA
            count = min(self.rng.randint(low, min(high, low + extra)), room // each)
        if inner.kind == "char":  # `[a-z]{n}`: one draw for them all
            self._spend(count)
            return "".join(self.rng.choices(inner.pool, k=count))
        out: list[str] = []
        used = 0
        for done in range(count):
            still_needed = max(0, min(count, low) - done - 1) * each  # by the iterations the pattern requires
            text = self.walk(inner, max(0, room - used - still_needed))
            if not text and each:
                break
            out.append(text)
            used += len(text)
        return "".join(out)


def _member(ch: str, members: list[tuple[Any, Any]]) -> bool:
    """Whether `ch` is one of a (not negated) class's members."""
    code = ord(ch)
    for op, arg in members:
        if op is sre.LITERAL and code == arg or op is sre.RANGE and arg[0] <= code <= arg[1]:
            return True
        if op is sre.CATEGORY and _category(ch, arg):
            return True
    return False


def _category(ch: str, category: Any) -> bool:
    word = ch.isalnum() or ch == "_"
    return {sre.CATEGORY_DIGIT: ch.isdecimal(), sre.CATEGORY_NOT_DIGIT: not ch.isdecimal(),
            sre.CATEGORY_SPACE: ch.isspace(), sre.CATEGORY_NOT_SPACE: not ch.isspace(),
            sre.CATEGORY_WORD: word, sre.CATEGORY_NOT_WORD: not word}.get(category, False)
