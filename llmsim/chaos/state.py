"""Where chaos state lives: fault config and schedules, counters, rate-limit buckets and the request log.

`ChaosState` keeps them in this process (one worker, or per worker with the memory and SQLite
stores); `llmsim.chaos.redis_state.RedisChaosState` keeps them in Redis for a whole fleet. Both
take one request's decision in one step: log it, take from its buckets, count it for the rules
in scope; only what is decided there is exact across processes.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmsim.chaos.faults import Injector
from llmsim.chaos.ratelimit import Charge, Limits, RateLimiter, Verdict
from llmsim.chaos.rules import FaultConfig, RequestInfo, Rule

RECENT = 500  # requests remembered for the admin API
ResolveLimits = Callable[[FaultConfig], Limits]


@dataclass
class Decision:
    """One generating request's fate: its log entry, its rate-limit verdict (when limits apply) and the rule
    that fires for it (or None)."""

    entry: dict[str, Any]
    limits: Limits
    verdict: Verdict | None = None
    rule: Rule | None = None


class ChaosState:
    """The chaos state of one process."""

    def __init__(self, config: FaultConfig, seed: int | None, limiter: RateLimiter | None = None) -> None:
        """`limiter`: the rate-limit buckets, this process's own unless given (shared by workers: shared_limits.py)."""
        self.injector = Injector(config, seed)
        self.limiter = limiter or RateLimiter()
        self._recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self._served = 0
        self._lock = threading.Lock()

    @property
    def config(self) -> FaultConfig:
        return self.injector.config

    def configure(self, config: FaultConfig) -> None:
        """Replace the config; schedules start again from the next request."""
        self.injector.configure(config)

    def decide(self, request: RequestInfo, entry: dict[str, Any], key: tuple[str, str], resolve: ResolveLimits,
              tokens: Charge, choose: bool, whole: bool = False) -> Decision:
        """Log the request, take from its buckets, and (when `choose` and it was admitted) pick the rule. `whole`:
        nothing of the answer leaves or waits before it is made (a shared state may record the request then)."""
        with self._lock:
            self._served += 1
            entry = {"index": self._served, **entry}
            self._recent.append(entry)
        limits = resolve(self.config)
        decision = Decision(entry, limits)
        if limits:
            decision.verdict = self.limiter.acquire(key, limits, tokens)
            if not decision.verdict.allowed:
                return decision
        decision.rule = self.injector.choose(request) if choose else None
        return decision

    def settle(self, key: tuple[str, str], limits: Limits, extra_tokens: Charge) -> None:
        self.limiter.settle(key, limits, extra_tokens)

    def count(self, kind: str) -> None:
        self.injector.count(kind)

    def finish(self, entry: dict[str, Any]) -> None:
        """The entry is complete (status, fault); in this process the log holds the very dict already."""

    def counters(self) -> dict[str, Any]:
        return {"faults": dict(self.injector.counters), "rate_limited": self.limiter.rejected,
                "requests": self._served}

    def recent(self, limit: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._recent)[-limit:]

    def reset(self) -> None:
        """Counters, schedules, random sequences, rate-limit buckets and the request log, all from zero."""
        self.injector.reset()
        self.limiter.reset()
        with self._lock:
            self._recent.clear()
            self._served = 0
