"""Latency distributions as profiles declare them: normal or lognormal, by p50/p95 or mean/stddev, clamped.

A distribution is data (a pydantic model read from YAML, in milliseconds); sampling
takes the caller's `random.Random`, so a seeded request times itself the same way
in every process, and `quantile` gives the configured values a benchmark compares with.
"""

from __future__ import annotations

import math
import random
from functools import cached_property
from statistics import NormalDist
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# random.NV_MAGICCONST, as the standard library computes it (its stubs leave the constant out).
_NV_MAGICCONST = 4 * math.exp(-0.5) / math.sqrt(2.0)

Z95 = NormalDist().inv_cdf(0.95)


class Distribution(BaseModel):
    """Milliseconds. Give either p50 and p95 or mean and stddev; min/max clamp every sample."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["normal", "lognormal"] = "lognormal"
    p50: float | None = Field(None, gt=0)
    p95: float | None = Field(None, gt=0)
    mean: float | None = Field(None, gt=0)
    stddev: float | None = Field(None, ge=0)
    min: float = Field(0.0, ge=0)
    max: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_parametrisation(self) -> Distribution:
        by_percentiles = self.p50 is not None or self.p95 is not None
        by_moments = self.mean is not None or self.stddev is not None
        if by_percentiles == by_moments:
            raise ValueError("give either p50 and p95, or mean and stddev")
        if by_percentiles and (self.p50 is None or self.p95 is None):
            raise ValueError("p50 and p95 go together")
        if by_moments and (self.mean is None or self.stddev is None):
            raise ValueError("mean and stddev go together")
        if self.p50 is not None and self.p95 is not None and self.p95 < self.p50:
            raise ValueError(f"p95 ({self.p95}) is below p50 ({self.p50})")
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self

    @cached_property
    def _params(self) -> tuple[float, float]:
        """(mu, sigma) of the normal, or of the underlying normal for a lognormal."""
        if self.kind == "normal":
            if self.p50 is not None and self.p95 is not None:
                return self.p50, (self.p95 - self.p50) / Z95
            return float(self.mean or 0), float(self.stddev or 0)
        if self.p50 is not None and self.p95 is not None:
            return math.log(self.p50), math.log(self.p95 / self.p50) / Z95
        mean, stddev = float(self.mean or 0), float(self.stddev or 0)
        sigma2 = math.log1p((stddev / mean) ** 2)
        return math.log(mean) - sigma2 / 2, math.sqrt(sigma2)

    def _clamp(self, value: float) -> float:
        value = max(self.min, value)
        return value if self.max is None else min(self.max, value)

    def sample(self, rng: random.Random) -> float:
        mu, sigma = self._params
        if self.kind == "normal":
            return self._clamp(rng.gauss(mu, sigma))
        return self._clamp(rng.lognormvariate(mu, sigma))

    def samples(self, rng: random.Random, count: int) -> list[float]:
        """`count` samples, the values (and draws) `sample` makes one by one, without a call each."""
        mu, sigma = self._params
        low, high = self.min, math.inf if self.max is None else self.max
        if self.kind == "normal":
            draw = rng.gauss
            return [min(high, max(low, draw(mu, sigma))) for _ in range(count)]
        return [min(high, max(low, value)) for value in lognormal(rng, mu, sigma, count)]

    def quantile(self, q: float) -> float:
        """The configured q-quantile (clamping included): what a fair measurement should find."""
        mu, sigma = self._params
        z = NormalDist().inv_cdf(q)
        value = mu + sigma * z
        return self._clamp(value if self.kind == "normal" else math.exp(value))


class Concurrency(BaseModel):
    """How many sequences a model runs at once (per worker process) and how that slows each of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_sequences: int = Field(gt=0)  # requests past this wait in a queue, in arrival order
    slowdown_per_sequence: float = Field(0.0, ge=0)  # each other running sequence adds this share to every wait

    def factor(self, running: int) -> float:
        return 1.0 + self.slowdown_per_sequence * max(0, running - 1)


class Timing(BaseModel):
    """A model's timing: TTFT grows with input length, visible tokens at the inter-token latency."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ttft_ms: Distribution  # time to the first token for an empty prompt
    itl_ms: Distribution  # between visible output tokens
    prefill_tokens_per_s: float = Field(gt=0)  # TTFT adds input_tokens / this
    reasoning_tokens_per_s: float = Field(gt=0)  # hidden reasoning tokens, before the visible answer
    concurrency: Concurrency | None = None


def lognormal(rng: random.Random, mu: float, sigma: float, count: int) -> list[float]:
    """`count` values of `rng.lognormvariate(mu, sigma)`: the same draws and arithmetic (its `normalvariate`'s
    Kinderman-Monahan loop, as the standard library writes it), without two Python calls per value: a paced
    answer draws one per token."""
    uniform, log, exp = rng.random, math.log, math.exp
    values = []
    for _ in range(count):
        while True:
            u1 = uniform()
            u2 = 1.0 - uniform()
            z = _NV_MAGICCONST * (u1 - 0.5) / u2
            if z * z / 4.0 <= -log(u2):
                break
        values.append(exp(mu + z * sigma))
    return values
