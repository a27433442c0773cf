"""The simulator's answer text, by `--text-mode`:

- `prose` (default): readable English shaped by the question (intent.py): code in a fenced block, steps as a
  numbered list, lists as bullets, comparisons as a markdown table, questions answered first; it mentions
  the question's key nouns.
- `echo`: the last user message, exactly.
- `lorem`: classic lorem ipsum filler.
- `faker`: Faker sentences (LLMSim's text before prose existed).

Text is assembled from pieces whose tokens are cached per encoding, so an answer costs string joins and
dictionary look-ups rather than tokenizer calls. Pieces are cut only where tiktoken's pre-tokenizer splits
anyway, so the concatenated ids are exactly what encoding the whole text gives (tested).
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llmsim import tokens
from llmsim.backends.sim import code, intent, phrases
from llmsim.backends.sim.intent import Intent

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

DEFAULT_MODE = "prose"

CACHED_PIECE_CHARS = 160
Chunk = tuple[str, int]  # one delta's text and the tokens it stands for (several when a character spans tokens)
_SLOT = re.compile(r"(\{(?:topic|other|a|b|language)\})")


@dataclass
class Answer:
    chunks: list[Chunk]
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = sum(n for _, n in self.chunks)

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.chunks)

    def truncated(self, budget: int) -> Answer:
        """The first `budget` tokens' worth of whole chunks."""
        kept, spent = [], 0
        for text, n in self.chunks:
            if spent + n > budget:
                break
            kept.append((text, n))
            spent += n
        return Answer(kept)


def compose(mode: str, question: str, target: int, rng: random.Random, encoding: str,
            fake: Callable[[], Faker] | None = None) -> Answer:
    """An answer of about `target` tokens (exact for echo) in the given mode."""
    if mode == "echo":
        return tokenize(question, encoding)
    writer = Writer(encoding)
    if mode == "lorem":
        _lorem(writer, target, rng)
    elif mode == "faker":
        if fake is None:
            raise ValueError("faker mode needs a Faker")
        _faker(writer, target, fake())
    else:
        _prose(writer, intent.read(question), target, rng)
    return writer.answer()


def plan(question: str, words: int) -> list[str]:
    """A reasoning summary of exactly `words` words that reads like a plan for the answer."""
    read = intent.read(question)
    slots = slot_values(read)
    sentences = [fill(s, slots) for s in phrases.PLANS[read.shape]]
    out: list[str] = []
    while len(out) < words:
        for sentence in sentences:
            out.extend(sentence.split(" "))
            if len(out) >= words:
                break
    out = out[:words]
    if out and not out[-1].endswith("."):
        out[-1] = out[-1].rstrip(",:;") + "."
    return out


class Writer:
    """Pieces of text in order, with their token count kept as they are added."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.pieces: list[str] = []
        self.tokens = 0

    def add(self, text: str, tokens: int | None = None) -> None:
        """`tokens`: the piece's count when the caller knows it, so a one-off piece is tokenized only once."""
        self.pieces.append(text)
        self.tokens += len(_piece(self.encoding, text)[0]) if tokens is None else tokens

    def sentence(self, template: str, slots: dict[str, str]) -> None:
        """A sentence continuing the paragraph: its slots become pieces of their own so the fixed parts are
        tokenized once per process, whatever the topic."""
        lead = " " if self.pieces and not self.pieces[-1].endswith("\n") else ""
        for i, (part, slot) in enumerate(_parts(template)):
            text = slots[part] if slot else part
            if i == 0 and not lead:
                text = text[:1].upper() + text[1:]  # a slot that starts a sentence
            self.add(lead + text if i == 0 else text)

    def breaks(self, newlines: str = "\n\n") -> None:
        if self.pieces:
            self.pieces[-1] += newlines  # newlines end the piece before: a pre-tokenizer boundary follows
            self.tokens = self.tokens - len(_piece(self.encoding, self.pieces[-1][:-len(newlines)])[0]) + \
                len(_piece(self.encoding, self.pieces[-1])[0])

    def answer(self) -> Answer:
        if self.pieces and self.pieces[-1].endswith("\n"):
            self.pieces[-1] = self.pieces[-1].rstrip("\n")
        return _tokenized(self.pieces, self.encoding)


def tokenize(text: str, encoding: str) -> Answer:
    """Any text as an answer, uncached: echoed input, scripted replies, JSON, tool arguments."""
    return Answer(list(_split(encoding, text)[1]))


def _prose(writer: Writer, read: Intent, target: int, rng: random.Random) -> None:
    slots = slot_values(read)
    if read.shape == "code":
        _code(writer, read, target, rng, slots)
    elif read.shape == "steps":
        _numbered(writer, target, rng, slots)
    elif read.shape == "list":
        _bullets(writer, target, rng, slots)
    elif read.shape == "table":
        _table(writer, target, rng, slots)
    else:
        opener = rng.choice(phrases.DIRECT_ANSWERS if read.shape == "question" else phrases.OPENINGS)
        writer.sentence(opener, slots)
        _paragraphs(writer, target, rng, slots)


def _paragraphs(writer: Writer, target: int, rng: random.Random, slots: dict[str, str],
                closing: bool = True) -> None:
    body = _deck(phrases.BODY, rng)
    if slots["other"] != phrases.FALLBACK_OTHER:  # the question's second subject is mentioned early
        body.append(body.pop(next(i for i, s in enumerate(body) if "{other}" in s)))
    in_paragraph = 1
    while writer.tokens < target and body:
        if in_paragraph >= rng.randint(3, 5):
            writer.breaks()
            in_paragraph = 0
        writer.sentence(body.pop(), slots)
        in_paragraph += 1
    if closing and writer.tokens >= 60:
        writer.sentence(rng.choice(phrases.CLOSINGS), slots)


def _numbered(writer: Writer, target: int, rng: random.Random, slots: dict[str, str]) -> None:
    writer.sentence(rng.choice(phrases.STEP_INTROS), slots)
    writer.breaks()
    count = max(3, min(len(phrases.STEPS), target // 18))
    chosen = sorted(rng.sample(range(len(phrases.STEPS)), count))  # steps keep their order
    if slots["other"] != phrases.FALLBACK_OTHER and not any("{other}" in phrases.STEPS[i] for i in chosen):
        chosen = sorted(chosen[:-1] + [next(i for i, s in enumerate(phrases.STEPS) if "{other}" in s)])
    for number, index in enumerate(chosen, 1):
        writer.add(f"{number}.")
        writer.sentence(phrases.STEPS[index], slots)
        writer.breaks("\n")
    _tail(writer, target, rng, slots)


def _bullets(writer: Writer, target: int, rng: random.Random, slots: dict[str, str]) -> None:
    writer.sentence(rng.choice(phrases.LIST_INTROS), slots)
    writer.breaks()
    count = max(3, min(len(phrases.LIST_ITEMS), target // 18))
    items = _deck(phrases.LIST_ITEMS, rng)
    if slots["other"] != phrases.FALLBACK_OTHER:
        items.insert(0, items.pop(next(i for i, s in enumerate(items) if "{other}" in s)))
    for item in items[:count]:
        writer.add("-")
        writer.sentence(item, slots)
        writer.breaks("\n")
    _tail(writer, target, rng, slots)


def _table(writer: Writer, target: int, rng: random.Random, slots: dict[str, str]) -> None:
    writer.sentence(rng.choice(phrases.TABLE_INTROS), slots)
    writer.breaks()
    writer.add(f"| Aspect | {slots['a']} | {slots['b']} |\n")
    writer.add("|---|---|---|\n")
    count = max(3, min(len(phrases.TABLE_ROWS), target // 16))
    for aspect, one, other in _deck(phrases.TABLE_ROWS, rng)[:count]:
        left, right = (one, other) if rng.random() < 0.5 else (other, one)
        writer.add(f"| {aspect} | {left} | {right} |\n")
    writer.breaks("\n")
    writer.sentence(rng.choice(phrases.TABLE_CLOSINGS), slots)


def _code(writer: Writer, read: Intent, target: int, rng: random.Random, slots: dict[str, str]) -> None:
    language = read.language or "python"
    if target >= 40:
        writer.sentence(rng.choice(phrases.CODE_INTROS), slots)
        writer.breaks()
    words = read.function_name or ("process", "items")
    doc = f"{words[0].capitalize()} {' '.join(words[1:])}: a small, self-contained starting point.".replace(" :", ":")
    writer.add(code.block(language, words, re.sub(r"[^A-Za-z0-9 ,.:-]", "", doc), rng.randrange(1 << 16)) + "\n")
    writer.breaks("\n")
    notes = _deck(phrases.CODE_NOTES, rng)
    while writer.tokens < target and notes:
        writer.sentence(notes.pop(), slots)


def _tail(writer: Writer, target: int, rng: random.Random, slots: dict[str, str]) -> None:
    writer.breaks("\n")
    if writer.tokens < target:
        _paragraphs(writer, target, rng, slots, closing=False)


def _lorem(writer: Writer, target: int, rng: random.Random) -> None:
    writer.add(phrases.LOREM_OPENING)
    while writer.tokens < target:
        words = [rng.choice(phrases.LOREM_WORDS) for _ in range(rng.randint(6, 14))]
        if len(words) > 8 and rng.random() < 0.5:
            words[rng.randint(3, len(words) - 3)] += ","
        writer.add(" " + " ".join(words).capitalize() + ".")


def _faker(writer: Writer, target: int, fake: Faker) -> None:
    sentences: list[str] = []
    count = 0
    while count < target:
        sentence = fake.sentence(nb_words=fake.random_int(6, 16))
        sentences.append(sentence)
        count += len(tokens.encoding(writer.encoding).encode_ordinary(" " + sentence))
    writer.add(" ".join(sentences), count)


def slot_values(read: Intent) -> dict[str, str]:
    topics = read.topics or (phrases.FALLBACK_TOPIC,)
    pair = read.pair or ((topics[0], topics[1]) if len(topics) > 1 else ("the first option", "the second option"))
    return {"topic": topics[0], "other": topics[1] if len(topics) > 1 else phrases.FALLBACK_OTHER,
            "a": pair[0], "b": pair[1], "language": code.DISPLAY.get(read.language or "python", "Python")}


@functools.lru_cache(maxsize=1024)
def _parts(template: str) -> tuple[tuple[str, bool], ...]:
    """A bank template's fixed text and slot names (flagged True), in order: split by the regex once per
    process rather than for every sentence written."""
    return tuple((part[1:-1], True) if _SLOT.fullmatch(part) else (part, False)
                 for part in _SLOT.split(template) if part)


def fill(template: str, slots: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: slots[m.group()[1:-1]], template)


def _deck(items: Sequence[str] | Sequence[tuple[str, str, str]], rng: random.Random) -> list:
    deck = list(items)
    rng.shuffle(deck)
    return deck


def _tokenized(pieces: list[str], encoding: str) -> Answer:
    """The pieces' cached chunks, after merging any two pieces whose boundary the pre-tokenizer would not cut."""
    chunks: list[Chunk] = []
    pending = ""
    for piece in pieces:
        if pending and not _boundary(pending, piece):
            pending += piece
            continue
        if pending:
            chunks.extend(_piece(encoding, pending)[1])
        pending = piece
    if pending:
        chunks.extend(_piece(encoding, pending)[1])
    return Answer(chunks)


def _boundary(before: str, after: str) -> bool:
    """True where tiktoken's pattern (o200k and cl100k alike) always starts a new chunk: before a space and a
    letter when no whitespace precedes, or after a newline when no whitespace follows."""
    if after[:1] == " " and after[1:2].isalpha() and not before[-1:].isspace():
        return True
    return before.endswith("\n") and not after[:1].isspace()


def _piece(encoding: str, text: str) -> tuple[tuple[int, ...], tuple[Chunk, ...]]:
    """Short pieces (the bank's fixed text, topics of at most `intent.MAX_TOPIC_CHARS`) are tokenized once per
    process; long one-off pieces (a code block, Faker's sentences) are not kept."""
    return _cached(encoding, text) if len(text) <= CACHED_PIECE_CHARS else _split(encoding, text)


@functools.lru_cache(maxsize=16384)
def _cached(encoding: str, text: str) -> tuple[tuple[int, ...], tuple[Chunk, ...]]:
    return _split(encoding, text)


def _split(encoding: str, text: str) -> tuple[tuple[int, ...], tuple[Chunk, ...]]:
    """Token ids and deltas: one delta per token, merged where a character spans several tokens."""
    enc = tokens.encoding(encoding)
    ids = tuple(enc.encode_ordinary(text))
    chunks: list[Chunk] = []
    pending, merged = b"", 0
    for token in ids:
        pending += enc.decode_single_token_bytes(token)
        merged += 1
        try:
            decoded = pending.decode("utf-8")
        except UnicodeDecodeError:
            continue
        chunks.append((decoded, merged))
        pending, merged = b"", 0
    if pending:  # only a malformed piece ends mid-character; keep its count exact
        chunks.append((pending.decode("utf-8", "replace"), merged))
    return ids, tuple(chunks)
