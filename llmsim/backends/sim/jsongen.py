"""JSON Schema → a plausible instance that validates, and the schema checks the real API makes.

Used for function-call arguments and structured outputs. Generation is driven by one
`random.Random`, so a seeded request always produces the same JSON. A schema no value
satisfies still gets an answer (the nearest one), never an exception. Strings honour
`format`, `pattern` (bounded), lengths and enums; numbers honour bounds and `multipleOf`;
`$ref`, `anyOf`/`oneOf`/`allOf` and recursive definitions are followed, with depth bounded.

What a schema asks for is honoured up to bounds that keep one instance cheap: a schema demanding more (an
array of `minItems: 100000`, a string of `minLength: 10**9`, required properties that recurse for ever)
gets an instance cut to those bounds, as a model would stop at its output budget.
"""

from __future__ import annotations

import math
import random
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from llmsim.backends.sim import regexgen
from llmsim.backends.sim.fake import lazy_faker
from llmsim.shared.schema_checks import pointer

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

MAX_DEPTH = 6  # past this, optional parts are dropped and null/empty branches preferred
MAX_NESTING = 32  # past this every value is null, so required parts that recurse end
MAX_ITEMS = 1_000  # items (or extra properties) of one array (object), whatever minItems says
MAX_LENGTH = 10_000  # characters a string is padded to, whatever minLength says
MAX_VALUES = 20_000  # values in one instance: past this, arrays and objects stop growing
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_HUGE_REPEAT = re.compile(r"\{\s*\d{5,}")  # a pattern with a repeat count of 10,000 or more
OPTIONAL_SHARE = 0.5  # of optional properties filled: about what models do when nothing asks for them
# Property names whose numbers are whole (Codex's `timeout_ms`, `max_output_tokens` are u64 in its Rust types).
_COUNT_NAME = re.compile(r"(?:^|_)(?:ms|millis|seconds|secs|tokens|count|counts|num|number|max|min|limit|size|"
                         r"timeout|page|pages|port|index|offset|length|retries|attempts|year|age|n|k|top_k|items|"
                         r"lines|width|height|depth|id)(?:$|_)|(?:Ms|Tokens|Count|Limit|Size)$", re.IGNORECASE)
NAME_HINTS = {  # property name → faker provider, so arguments look like what a model would fill in
    "city": "city", "location": "city", "town": "city", "country": "country", "name": "name",
    "first_name": "first_name", "last_name": "last_name", "username": "user_name", "email": "email",
    "address": "address", "street": "street_address", "company": "company", "phone": "phone_number",
    "url": "url", "title": "sentence", "query": "sentence", "q": "sentence", "text": "sentence",
    "description": "sentence", "summary": "sentence", "message": "sentence", "content": "sentence",
    "language": "language_name", "currency": "currency_code", "color": "color_name", "job": "job",
}


class Generator:
    def __init__(self, root: dict[str, Any] | bool, rng: random.Random, fake: Faker | None = None,
                 hints: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.rng = rng
        self.hints = hints if hints is not None else {}
        if fake is None:
            fake = lazy_faker()
            fake.seed_instance(rng.getrandbits(64))
        self.fake = fake
        self.values = 0  # made so far, against MAX_VALUES

    @property
    def full(self) -> bool:
        return self.values >= MAX_VALUES

    def value(self, schema: dict[str, Any] | bool | None = None, hint: str = "", depth: int = 0) -> Any:
        schema = self.root if schema is None else schema
        self.values += 1
        if depth > MAX_NESTING:
            return None
        if schema is True or schema == {}:
            return self._string({}, hint)
        if schema is False:
            return None  # nothing is valid: like a model, answer anyway
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return self.value({**target, **rest} if rest else target, hint, depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self._choice(schema["enum"], hint) if schema["enum"] else None
        if "allOf" in schema:
            return self.value(self._merge(schema), hint, depth)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = schema[key]
                if depth >= MAX_DEPTH:
                    branches = sorted(branches, key=self._weight)[:1]
                else:  # Optional[X] is filled with an X, as a model fills it
                    branches = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")] \
                        or branches
                base = {k: v for k, v in schema.items() if k != key}
                return self.value({**base, **self.rng.choice(branches)}, hint, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            kind = "null" if depth >= MAX_DEPTH and "null" in kind else self.rng.choice(kinds)
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, hint, depth)
        if kind == "integer":
            return self._integer(schema, hint)
        if kind == "number":
            return self._number(schema, hint)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self._string(schema, hint)

    # --- structure ----------------------------------------------------------------------------

    def _resolve(self, ref: str) -> Any:
        return pointer(self.root, ref)

    def _merge(self, schema: dict[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = self._resolve(part["$ref"]) if isinstance(part, dict) and "$ref" in part else part
            if not isinstance(part, dict):
                continue
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = sorted(set(merged.get("required", [])) | set(value))
                else:
                    merged.setdefault(key, value)
        return merged

    @staticmethod
    def _weight(branch: Any) -> int:
        """Cheaper branches first when depth runs out: null, scalars, then containers, then refs."""
        if not isinstance(branch, dict):
            return 1
        kind = branch.get("type")
        if kind == "null":
            return 0
        if "$ref" in branch or kind in ("object", "array"):
            return 3
        return 1

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        required = [p for p in schema.get("required", [])]
        optional = [p for p in properties if p not in required]
        chosen = set(required)
        if depth < MAX_DEPTH:
            chosen |= {p for p in optional if self.rng.random() < OPTIONAL_SHARE}
            if optional and not chosen:  # an object of only optional properties still says something
                chosen.add(optional[0] if len(optional) == 1 else self.rng.choice(optional))
        low = schema.get("minProperties", 0)
        for name in optional:
            if len(chosen) >= low:
                break
            chosen.add(name)
        out: dict[str, Any] = {}
        for name in list(properties) + [p for p in required if p not in properties]:
            if name in chosen:
                sub = properties.get(name, schema.get("additionalProperties", True))
                out[name] = self.value(True if sub is False else sub, name, depth + 1)
        extra = schema.get("additionalProperties", True)
        while len(out) < min(low, MAX_ITEMS) and extra is not False and not self.full:
            out[f"{self.fake.word()}_{len(out)}"] = self.value(extra, "", depth + 1)
        return out

    def _array(self, schema: dict[str, Any], hint: str, depth: int) -> list[Any]:
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", True)
        low = max(schema.get("minItems", 0), len(prefix) if items is False else 0)
        high = schema.get("maxItems", low + (0 if depth >= MAX_DEPTH else 3))
        first = max(low, 1) if high >= 1 else low  # a model lists at least one item where it may
        count = low if depth >= MAX_DEPTH else self.rng.randint(first, max(first, min(high, low + 3)))
        count = min(count, MAX_ITEMS)
        singular = hint[:-1] if hint.endswith("s") else hint
        out: list[Any] = []
        attempts = 0
        while len(out) < count and attempts < count * 20 + 20 and not (self.full and out):
            attempts += 1
            sub = prefix[len(out)] if len(out) < len(prefix) else items
            value = self.value(sub, singular, depth + 1)
            if schema.get("uniqueItems") and value in out:
                continue
            out.append(value)
        return out

    # --- scalars ------------------------------------------------------------------------------

    def _bounds(self, schema: dict[str, Any], step: float) -> tuple[float, float]:
        low = schema.get("minimum", -math.inf)
        high = schema.get("maximum", math.inf)
        if "exclusiveMinimum" in schema:
            low = max(low, schema["exclusiveMinimum"] + step)
        if "exclusiveMaximum" in schema:
            high = min(high, schema["exclusiveMaximum"] - step)
        if low == -math.inf and high == math.inf:
            low, high = 0, 100
        elif low == -math.inf:
            low = high - 100
        elif high == math.inf:
            high = low + 100
        return low, max(low, high)  # empty ranges answer their lower bound, as a model would, invalid or not

    def _choice(self, options: list[Any], hint: str) -> Any:
        """The option the request names (its own words: "in sf" picks "sf"), else a seeded pick."""
        named = self.hints.get(hint.lower())
        if named in options:
            return named
        question = self.hints.get("question", "")
        if question:
            lowered = question.lower()
            for option in options:
                if isinstance(option, str) and option and \
                        re.search(r"(?<![\w-])" + re.escape(option.lower()) + r"(?![\w-])", lowered):
                    return option
        return self.rng.choice(options)

    def _hinted_number(self, schema: dict[str, Any], hint: str) -> float | None:
        """A number the request gives for this property ("3 days" for `days`), when it fits the bounds."""
        text = self.hints.get(hint.lower())
        try:
            value = float(text) if text is not None else None
        except ValueError:
            return None
        low, high = self._bounds(schema, 1)
        return value if value is not None and low <= value <= high else None

    def _integer(self, schema: dict[str, Any], hint: str = "") -> int:
        hinted = self._hinted_number(schema, hint)
        if hinted is not None and hinted.is_integer():
            return int(hinted)
        low, high = self._bounds(schema, 1)
        return int(self._multiple(math.ceil(low), math.floor(high), schema.get("multipleOf") or 1))

    def _number(self, schema: dict[str, Any], hint: str = "") -> float | int:
        hinted = self._hinted_number(schema, hint)
        if hinted is not None:
            return int(hinted) if hinted.is_integer() else hinted
        step = schema.get("multipleOf")
        if not step and _COUNT_NAME.search(hint):  # a number that counts (tokens, ms, items) is whole
            low, high = self._bounds(schema, 1)
            if math.ceil(low) <= math.floor(high):
                return self.rng.randint(math.ceil(low), math.floor(high))
        low, high = self._bounds(schema, step or 0.01)
        if step:
            return self._multiple(low, high, step)
        value = round(self.rng.uniform(low, high), 2)
        return value if low <= value <= high else low

    def _multiple(self, low: float, high: float, step: float) -> float | int:
        first, last = math.ceil(low / step), math.floor(high / step)
        if first > last:
            return low
        value = self.rng.randint(first, last) * step
        return int(value) if float(value).is_integer() else value

    def _string(self, schema: dict[str, Any], hint: str) -> str:
        low, high = min(schema.get("minLength", 0), MAX_LENGTH), schema.get("maxLength")
        matching = from_regex(schema["pattern"], self.rng) if "pattern" in schema else None
        if matching is not None:
            text = matching
        elif "format" in schema and not (schema["format"] == "date" and _DATE.fullmatch(self.hints.get(hint.lower(),
                                                                                                        ""))):
            text = self._format(schema["format"])
        elif hint.lower() in self.hints:
            text = self.hints[hint.lower()]
        else:
            provider = NAME_HINTS.get(hint.lower())
            words = self.rng.randint(1, 3)
            text = str(getattr(self.fake, provider)()) if provider else " ".join(self.fake.words(words))
        if high is not None and len(text) > high and matching is None:
            text = text[:high]
        if len(text) < low and matching is None:
            text += "x" * (low - len(text))
        return text

    def _format(self, fmt: str) -> str:
        moment = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(seconds=self.rng.randint(0, 10**8))
        fake = self.fake
        formats = {
            "date-time": lambda: moment.isoformat().replace("+00:00", "Z"),
            "date": lambda: moment.date().isoformat(),
            "time": lambda: moment.time().isoformat() + "Z",
            "duration": lambda: f"P{self.rng.randint(1, 30)}DT{self.rng.randint(0, 23)}H",
            "email": fake.email,
            "idn-email": fake.email,
            "hostname": fake.domain_name,
            "idn-hostname": fake.domain_name,
            "ipv4": fake.ipv4,
            "ipv6": fake.ipv6,
            "uri": fake.url,
            "url": fake.url,
            "iri": fake.url,
            "uri-reference": fake.uri_path,
            "uuid": lambda: str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
        }
        return formats.get(fmt, lambda: fake.word())()


def from_regex(pattern: str, rng: random.Random) -> str | None:
    """A string matching `pattern` within a budget (llmsim/backends/sim/regexgen.py: at most MAX_LENGTH
    characters, cut to them when no match is that short), or None for one Python's regex engine cannot parse."""
    return regexgen.generate(pattern, rng, max_length=MAX_LENGTH)


def generate(schema: dict[str, Any] | bool, rng: random.Random, fake: Faker | None = None,
             hints: Mapping[str, str] | None = None) -> Any:
    """One instance of `schema`, drawn from `rng`; `hints` give free-form strings by property name."""
    return Generator(schema, rng, fake, hints).value()
