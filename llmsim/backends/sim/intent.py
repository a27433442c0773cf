"""What the question asks for: the shape of a good answer (code, steps, list, table, direct answer, prose),
the language of requested code, and the key nouns an answer should mention.

Plain regular expressions and a stop-word list: cheap, deterministic, good enough to shape simulated text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

Shape = Literal["code", "steps", "list", "table", "question", "prose"]

MAX_TOPICS = 3
MAX_TOPIC_WORDS = 3
MAX_TOPIC_CHARS = 40
MAX_SCAN_CHARS = 2000  # a question's key words are near its start; a long paste is not scanned whole

LANGUAGES = {
    "python": "python", "py": "python", "javascript": "javascript", "js": "javascript", "node": "javascript",
    "node.js": "javascript", "nodejs": "javascript", "typescript": "typescript", "ts": "typescript",
    "go": "go", "golang": "go", "rust": "rust", "java": "java", "bash": "bash", "shell": "bash", "sh": "bash",
    "sql": "sql", "postgres": "sql", "postgresql": "sql", "sqlite": "sql", "mysql": "sql",
}
_LANGUAGE = re.compile(r"\b(?:in|using|with|for)\s+(python|javascript|typescript|golang|go|rust|java|bash|shell|sql|"
                       r"node(?:\.?js)?|postgres(?:ql)?|sqlite|mysql|js|ts|py|sh)\b", re.I)
_LANGUAGE_NAMED = re.compile(r"\b(python|javascript|typescript|golang|rust|java|bash|sql|node\.?js)\b|"
                             r"\b(?-i:(Go))\s+(?:function|program|code|script|snippet|package|module)", re.I)
_CODE = re.compile(r"```|\b(?:write|implement|create|code|build|generate|give me|show me)\b[^.?!]{0,60}?\b"
                   r"(?:function|class|script|program|method|snippet|query|code|regex|decorator|endpoint|cli)\b|"
                   r"\b(?:function|script|snippet|query)\s+(?:that|to|which|for)\b", re.I)
_TABLE = re.compile(r"\bcompare\b|\bcomparison\b|\bvs\.?\s|\bversus\b|\bdifferences?\s+between\b|"
                    r"\bpros\s+and\s+cons\b|\btrade-?offs?\b|\bwhich is better\b", re.I)
_STEPS = re.compile(r"\bsteps?\b|\bhow\s+(?:do|can|should|would)\s+(?:i|we|you)\b|\bhow\s+to\b|\bguide\b|"
                    r"\bwalk\s+(?:me\s+)?through\b|\bprocess\s+(?:of|for)\b|\binstructions\b|\bset\s*up\b", re.I)
_LIST = re.compile(r"\blist\b|\bideas\b|\btips\b|\bexamples\b|\bways\b|\breasons\b|\boptions\b|\bbenefits\b|"
                   r"\badvantages\b|\bfeatures\b|\bchecklist\b|\bbullet", re.I)
_QUESTION_START = re.compile(r"^\s*(?:who|what|when|where|why|which|how|is|are|can|could|does|do|did|should|"
                             r"would|will|was|were|has|have)\b", re.I)
_PAIR = re.compile(r"\b(?:compare|comparing|between)\s+(.+?)\s+(?:and|with|to|vs\.?|versus)\s+(.+?)(?:[?.!,:;]|\s+"
                   r"(?:for|in|when|on|regarding)\s|$)|(\S+(?:\s+\S+)?)\s+(?:vs\.?|versus)\s+(\S+(?:\s+\S+)?)", re.I)
_FUNCTION_NAME = re.compile(r"\b(?:function|method|script|program|class)(?:\s+in\s+[\w.+#]+)?\s+"
                            r"(?:that|to|which|for|called)?\s*([A-Za-z]+)((?:\s+[A-Za-z]+){1,4})", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#'.-]*[A-Za-z0-9+#]|[A-Za-z]")
_SENTENCE_END = re.compile(r"[.?!:;,\n]")

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
few for from further had hadn't has hasn't have haven't having he her here hers herself him himself his how i
if in into is isn't it it's its itself let's me more most my myself no nor not of off on once only or other
ought our ours ourselves out over own same she should shouldn't so some such than that that's the their theirs
them themselves then there there's these they this those through to too under until up very was wasn't we
were weren't what what's when where which while who whom why with won't would wouldn't you your yours
yourself yourselves please thanks thank hi hello hey okay ok just really quite maybe kind sort
write writing written explain explaining describe tell give show make making create build implement help need
want like know think use using used get got go going work works working find look looking try trying
function functions code script program snippet example examples list lists step steps way ways idea ideas
tip tips reason reasons option options thing things something anything everything question answer answers
compare comparing comparison difference differences versus vs better best good great simple simply short
briefly brief detail detailed details quick quickly new one two three four five first second many much
js ts py sh nodejs
guide process instructions checklist bullet bullets points point pros cons tradeoff tradeoffs trade-off
benefits benefit advantages advantage features feature set setup able does whether given
near across within without among along around behind beyond toward towards upon via per inside outside onto
unlike since despite throughout beside besides amid instead rather often usually always never sometimes
""".split())

# Verbs that are rarely nouns: a run of content words ends before one ("why do volcanoes erupt near …" names
# "volcanoes"), so a topic is a noun phrase rather than a clause cut mid-way. Hand-picked, not a tagger: a
# POS tagger would need a model download (spaCy, NLTK data), which the offline base install cannot take.
VERBS = frozenset("""
erupt grow rise fall happen occur cause make affect differ exist matter form evolve survive die live fly float
sink melt freeze boil burn shine glow spin migrate hibernate sleep breathe bleed heal mean lead increase decrease
spread expand shrink collapse explode react dissolve absorb reflect produce prevent protect reduce improve require
depend contain include become seem appear feel taste smell stay remain keep hold move travel communicate behave
compute calculate handle manage send receive scale fail succeed win lose stop start begin end change cost take
bring teach allow help enable support interact compete cooperate develop emerge vanish disappear fit fix run
differ relate compare connect influence determine regulate control trigger drive slow speed heat cool
""".split())
# Adjectives that, after a noun, say something of it ('why is Rust popular'): the noun phrase ends before.
PREDICATES = frozenset("""
popular important useful necessary possible impossible better worse hard easy difficult slow fast safe unsafe
expensive cheap common rare dangerous healthy unhealthy bad good secure insecure reliable stable
""".split())
_WH = frozenset({"what", "who", "which", "that", "whose"})


@dataclass(frozen=True)
class Intent:
    shape: Shape
    topics: tuple[str, ...]  # key nouns or short noun phrases, most important first; may be empty
    language: str | None = None  # for code: a key of `code.TEMPLATES`
    pair: tuple[str, str] | None = None  # what a comparison compares
    function_name: tuple[str, ...] = ()  # the words a code answer's function is named from


def read(question: str) -> Intent:
    return _read(question[:MAX_SCAN_CHARS])


@functools.lru_cache(maxsize=256)  # agents and benchmarks ask the same questions again; at most ~0.5 MB of keys
def _read(text: str) -> Intent:
    topics = key_nouns(text)
    if _CODE.search(text):
        return Intent("code", topics, _language(text), function_name=_function_words(text, topics))
    if _TABLE.search(text):
        return Intent("table", topics, pair=_pair(text, topics))
    if _STEPS.search(text):
        return Intent("steps", topics)
    if _LIST.search(text):
        return Intent("list", topics)
    if text.rstrip().endswith("?") or _QUESTION_START.match(text):
        return Intent("question", topics)
    return Intent("prose", topics)


def key_nouns(text: str) -> tuple[str, ...]:
    """Runs of content words (not stop words) in order of appearance: 'how do Redis streams scale' gives
    ('Redis streams',). A sentence's capitalised first word is lowercased unless it looks like a name."""
    phrases: list[str] = []
    run: list[str] = []

    def close() -> None:
        if run:
            phrase = " ".join(run[:MAX_TOPIC_WORDS])[:MAX_TOPIC_CHARS].strip()
            if phrase and phrase.lower() not in (p.lower() for p in phrases):
                phrases.append(phrase)
            run.clear()

    start_of_sentence = True
    position = 0
    previous = ""
    for match in _WORD.finditer(text):
        gap = text[position:match.start()]
        position = match.end()
        if _SENTENCE_END.search(gap):
            close()
            start_of_sentence = start_of_sentence or bool(re.search(r"[.?!\n]", gap))
        word = match.group().rstrip(".'")
        lower = word.lower()
        if lower in STOP_WORDS or len(word) < 3 or word.isdigit() or _verb(lower, bool(run), previous):
            close()
        else:
            if start_of_sentence and word[0].isupper() and word[1:].islower():
                word = lower
            run.append(word)
        start_of_sentence = False
        previous = lower
        if len(phrases) >= MAX_TOPICS:
            break
    close()
    return tuple(phrases[:MAX_TOPICS])


def _verb(word: str, after_noun: bool, previous: str) -> bool:
    """A finite verb ending the noun phrase before it: a base form after a noun ('volcanoes erupt'), or an
    -s form right after a wh-word ('what causes inflation'); elsewhere an -s form is a plural noun."""
    if word in PREDICATES:
        return after_noun
    if word in VERBS:
        return after_noun or previous in _WH or previous in ("do", "does", "did", "can", "will", "to")
    if word.endswith("s") and (word[:-1] in VERBS or (word.endswith("es") and word[:-2] in VERBS)):
        return previous in _WH
    return False


def _language(text: str) -> str:
    match = _LANGUAGE.search(text) or _LANGUAGE_NAMED.search(text)
    return LANGUAGES.get((match.group(1) or match.group(2)).lower(), "python") if match else "python"


def _pair(text: str, topics: tuple[str, ...]) -> tuple[str, str] | None:
    match = _PAIR.search(text)
    if match:
        first, second = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        first, second = _clean(first), _clean(second)
        if first and second:
            return first, second
    return (topics[0], topics[1]) if len(topics) >= 2 else None


def _clean(phrase: str) -> str:
    """The named thing alone: 'the UDP: which' → 'UDP'."""
    words = re.findall(r"[A-Za-z0-9+#.-]+", re.split(r"[:;,?!]", phrase)[0])
    while words and words[0].lower() in STOP_WORDS:
        words.pop(0)
    kept = []
    for word in words[:MAX_TOPIC_WORDS]:
        if word.lower() in STOP_WORDS:
            break
        kept.append(word)
    return " ".join(kept)[:MAX_TOPIC_CHARS].strip(" .-")


def _function_words(text: str, topics: tuple[str, ...]) -> tuple[str, ...]:
    match = _FUNCTION_NAME.search(text)
    if match and match.group(1).lower() not in STOP_WORDS - {"find", "get", "make", "use", "create", "build"}:
        objects = [w.lower() for w in match.group(2).split() if w.lower() not in STOP_WORDS][:2]
        if objects:
            return (_base_verb(match.group(1).lower()), *objects)
    return ("process", *topics[0].lower().split()[:2]) if topics else ("process", "items")


def _base_verb(word: str) -> str:
    """'reverses' → 'reverse', 'parses' → 'parse', 'fetches' → 'fetch', 'copies' → 'copy'."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word
