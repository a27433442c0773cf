"""Real RPM/TPM/ITPM/OTPM limits: token buckets per (API key, model), reported the way the OpenAI API does (and,
for the Messages surface, per direction as Anthropic does: llmsim/messages/envelope.py renames them).

Buckets refill continuously (a per-minute limit refills limit/60 per second), which is how both APIs enforce
their per-minute limits over shorter windows. A rejected request takes nothing from its buckets, so after
`Retry-After` the same request goes through. Tokens are reserved up front and settled to the real usage when the
response finishes: TPM reserves input tokens plus `max_output_tokens` (OpenAI); ITPM counts the input tokens at
admission, less those a prompt cache reads, and OTPM reserves `max_tokens`, settled to the output actually made
(Anthropic, https://docs.claude.com/en/api/rate-limits).

The OpenAI surfaces have one `x-ratelimit-*-tokens` triple: with ITPM or OTPM set it reports the token bucket
with the fewest tokens left (the one that refuses first), like Anthropic's `anthropic-ratelimit-tokens-*`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import Field

from llmsim.errors import APIError
from llmsim.timing.profiles import Limits

ORGANIZATION = "org-llmsim"
EPSILON = 1e-9  # refills are sums of floats: a whole request refilled may read 0.99999...
DOCS = "Visit https://platform.openai.com/account/rate-limits to learn more."
MAX_BUCKET_BYTES = 8 * 1024 * 1024  # buckets kept (their keys' size plus BUCKET_BYTES each); least recent go first
BUCKET_BYTES = 200  # what one bucket and its dict entry take besides its key's strings
LIMIT_FIELDS = ("rpm", "tpm", "itpm", "otpm")
# bucket kind → (the Limits field, the x-ratelimit-* name, the 429's words); "requests" counts 1 a request
KINDS = {"requests": ("rpm", "requests", "requests per min (RPM)"),
         "tokens": ("tpm", "tokens", "tokens per min (TPM)"),
         "input_tokens": ("itpm", "input-tokens", "input tokens per min (ITPM)"),
         "output_tokens": ("otpm", "output-tokens", "output tokens per min (OTPM)")}
TOKEN_KINDS = ("tokens", "input_tokens", "output_tokens")
FIELDS = tuple((kind, field) for kind, (field, _, _) in KINDS.items())


@dataclass(slots=True)
class Charge:
    """What a request takes from the token buckets (or, settling, the difference from what it took): TPM takes
    input plus output, ITPM the input less what a cache reads, OTPM the output."""

    input: int
    output: int = 0
    cached: int = 0

    def amount(self, kind: str) -> int:
        if kind == "tokens":
            return self.input + self.output
        if kind == "input_tokens":
            return self.input - self.cached
        if kind == "output_tokens":
            return self.output
        return 1


class RateLimitConfig(Limits):
    """Defaults for every model, and per-model overrides (by model id or alias as requested)."""

    models: dict[str, Limits] = Field(default_factory=dict)

    def resolve(self, names: tuple[str, ...], profile: Limits | None = None) -> Limits:
        """The config's entry for the model, then the model's profile, then the config's defaults."""
        specific = next((self.models[name] for name in names if name in self.models), Limits())
        fallback = profile or Limits()
        return Limits(**{name: getattr(specific, name) or getattr(fallback, name) or getattr(self, name)
                         for name in LIMIT_FIELDS})


def duration(seconds: float) -> str:
    """The API's duration format for reset headers and messages: `120ms`, `1.5s`, `6m0s`, `1h2m3s`."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    seconds = round(seconds, 3)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


class Bucket:
    """Holds up to `capacity`; refills the whole capacity over one minute. The level may go below zero
    when a response used more tokens than it reserved; it then refills from there."""

    def __init__(self, capacity: int, now: float) -> None:
        self.capacity = capacity
        self.level = float(capacity)
        self.updated = now

    @property
    def rate(self) -> float:
        return self.capacity / 60.0

    def refill(self, now: float) -> None:
        self.level = min(float(self.capacity), self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait(self, amount: float) -> float:
        """Seconds until `amount` is available (0 when it is now)."""
        return max(0.0, (amount - self.level) / self.rate)

    def reset_in(self) -> float:
        """Seconds until the bucket is full again: the API's `x-ratelimit-reset-*`."""
        return max(0.0, (self.capacity - self.level) / self.rate)


@dataclass(slots=True)
class Verdict:
    """One admission decision and what the headers should say about it. `directional`: the answer reports input
    and output tokens apart (x-ratelimit-*-input-tokens / -output-tokens, for the Messages surface to rename)."""

    limits: Limits
    buckets: dict[str, Bucket]  # by kind (KINDS), those whose limit is set
    charge: Charge
    exceeded: str | None = None  # the kind refused, when rejected
    retry_after: float | None = None
    directional: bool = False

    @property
    def allowed(self) -> bool:
        return self.exceeded is None

    @property
    def requests(self) -> Bucket | None:
        return self.buckets.get("requests")

    @property
    def tokens(self) -> Bucket | None:
        """The token bucket the OpenAI-shaped headers report: the one with the fewest tokens left."""
        shown: Bucket | None = None
        for kind in TOKEN_KINDS:
            bucket = self.buckets.get(kind)
            if bucket is not None and (shown is None or (bucket.level, bucket.capacity) < (shown.level,
                                                                                          shown.capacity)):
                shown = bucket
        return shown

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        shown = [("requests", self.requests), ("tokens", self.tokens)]
        if self.directional:  # each direction's own bucket, else the TPM one, which counts both
            shown += [(KINDS[kind][1], self.buckets.get(kind, self.buckets.get("tokens")))
                      for kind in ("input_tokens", "output_tokens")]
        for name, bucket in shown:
            if bucket is not None:
                headers[f"x-ratelimit-limit-{name}"] = str(bucket.capacity)
                headers[f"x-ratelimit-remaining-{name}"] = str(max(0, math.floor(bucket.level)))
                headers[f"x-ratelimit-reset-{name}"] = duration(bucket.reset_in())
        return headers

    def error(self, model: str) -> APIError:
        """The 429 the API sends for this rejection, with Retry-After / retry-after-ms when retrying helps."""
        kind = self.exceeded or "requests"
        bucket = self.buckets[kind]
        unit = KINDS[kind][2]
        requested = self.charge.amount(kind)
        headers = self.headers()
        if self.retry_after is None:  # larger than the whole limit: waiting cannot help
            message = (f"Request too large for {model} in organization {ORGANIZATION} on {unit}: Limit "
                       f"{bucket.capacity}, Requested {requested}. The input or output tokens must be reduced in "
                       f"order to run successfully. {DOCS}")
        else:
            used = max(0, math.ceil(bucket.capacity - bucket.level))
            message = (f"Rate limit reached for {model} in organization {ORGANIZATION} on {unit}: Limit "
                       f"{bucket.capacity}, Used {used}, Requested {requested}. Please try again in "
                       f"{duration(self.retry_after)}. {DOCS}")
            headers.update(retry_after_headers(self.retry_after))
        # OpenAI's error type says requests or tokens; the words name the bucket (the Messages surface reads them)
        return APIError(message, status=429, type="requests" if kind == "requests" else "tokens",
                        code="rate_limit_exceeded", headers=headers)

    def refuse(self) -> None:
        """Set `exceeded` / `retry_after` from the buckets' levels: the first limit the charge does not fit."""
        for kind, bucket in self.buckets.items():
            amount = self.charge.amount(kind)
            if bucket.level + EPSILON < amount:
                self.exceeded = kind
                self.retry_after = bucket.wait(amount) if amount <= bucket.capacity else None
                return


def charge_of(tokens: int | Charge) -> Charge:
    """A bare count is all input (the TPM-only callers' way)."""
    return tokens if isinstance(tokens, Charge) else Charge(tokens)


def retry_after_headers(seconds: float) -> dict[str, str]:
    """`retry-after` in whole seconds (as HTTP defines it) and the exact `retry-after-ms` clients prefer."""
    return {"retry-after": str(max(1, math.ceil(seconds))), "retry-after-ms": str(max(1, math.ceil(seconds * 1000)))}


def _size(key: tuple[str, str, str]) -> int:
    return sum(map(len, key)) + BUCKET_BYTES


class RateLimiter:
    """Buckets per (API key, model); `clock` is injectable so tests can move time instead of waiting.

    Every distinct key and model makes buckets, so they are bounded in bytes: past `max_bytes` the least
    recently used go (a forgotten bucket starts full again, which only errs on the lenient side)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_bytes: int = MAX_BUCKET_BYTES) -> None:
        self.clock = clock
        self.max_bytes = max_bytes
        self.size = 0  # bytes the buckets take, by `_size`
        self._rejected = 0
        self._buckets: OrderedDict[tuple[str, str, str], Bucket] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def rejected(self) -> int:
        """Requests refused by a limit since the start (or the last reset)."""
        return self._rejected

    def _refused(self) -> None:
        self._rejected += 1

    @contextmanager
    def _held(self) -> Iterator[None]:
        """Around every change of the buckets: only one at a time."""
        with self._lock:
            yield

    def _bucket(self, key: tuple[str, str], kind: str, capacity: int | None, now: float) -> Bucket | None:
        if capacity is None:
            return None
        full_key = (*key, kind)
        bucket = self._buckets.get(full_key)
        if bucket is None:
            self.size += _size(full_key)
            while self._buckets and self.size > self.max_bytes:
                self.size -= _size(self._buckets.popitem(last=False)[0])
        if bucket is None or bucket.capacity != capacity:
            bucket = self._buckets[full_key] = Bucket(capacity, now)
        self._buckets.move_to_end(full_key)
        bucket.refill(now)
        return bucket

    def acquire(self, key: tuple[str, str], limits: Limits, tokens: int | Charge) -> Verdict:
        """Take one request and the charge's tokens, or take nothing and say which limit was hit."""
        charge = charge_of(tokens)
        with self._held():
            now = self.clock()
            buckets: dict[str, Bucket] = {}
            for kind, field in FIELDS:
                capacity = getattr(limits, field)
                if capacity is not None:
                    buckets[kind] = self._bucket(key, kind, capacity, now)  # type: ignore[assignment]
            verdict = Verdict(limits, buckets, charge)
            verdict.refuse()
            if verdict.exceeded is not None:
                self._refused()
                return verdict
            for kind, bucket in buckets.items():
                bucket.level -= charge.amount(kind)
            return verdict

    def settle(self, key: tuple[str, str], limits: Limits, extra_tokens: int | Charge) -> None:
        """Charge (or refund, when negative) the difference between reserved and used tokens."""
        extra = charge_of(extra_tokens)
        with self._held():
            now = self.clock()
            for kind in TOKEN_KINDS:
                amount = extra.amount(kind)
                bucket = self._bucket(key, kind, getattr(limits, KINDS[kind][0]), now) if amount else None
                if bucket is not None:
                    bucket.level = min(float(bucket.capacity), bucket.level - amount)

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()
            self.size = 0
            self._rejected = 0
