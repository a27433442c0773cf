"""Latency distributions and the pacer: seeded statistics, speed 0, the order and size of every wait.

Pacing runs on an injected clock and sleep, so nothing here depends on wall-clock time.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from llmsim.generation import Finish, Prompt, ReasoningDelta, TextDelta, ToolArgsDelta, ToolCallStart, Usage
from llmsim.timing.latency import Concurrency, Distribution, Timing
from llmsim.timing.pacing import Pacer
from llmsim.timing.profiles import Profile


def quantiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[94]


@pytest.mark.parametrize("kind", ["normal", "lognormal"])
def test_percentile_parametrisation_reproduces_p50_and_p95(kind: str) -> None:
    dist = Distribution(kind=kind, p50=100, p95=180)
    rng = random.Random(1)
    p50, p95 = quantiles([dist.sample(rng) for _ in range(40_000)])
    assert p50 == pytest.approx(100, rel=0.02)
    assert p95 == pytest.approx(180, rel=0.02)
    assert dist.quantile(0.5) == pytest.approx(100) and dist.quantile(0.95) == pytest.approx(180)


@pytest.mark.parametrize("kind", ["normal", "lognormal"])
def test_moment_parametrisation_reproduces_mean_and_stddev(kind: str) -> None:
    dist = Distribution(kind=kind, mean=50, stddev=10)
    rng = random.Random(2)
    samples = [dist.sample(rng) for _ in range(40_000)]
    assert statistics.fmean(samples) == pytest.approx(50, rel=0.02)
    assert statistics.stdev(samples) == pytest.approx(10, rel=0.03)


def test_lognormal_is_skewed_right_and_normal_is_not() -> None:
    lognormal, normal = Distribution(kind="lognormal", p50=100, p95=130), Distribution(kind="normal", p50=100, p95=130)
    assert lognormal.quantile(0.99) - 100 > 1.2 * (100 - lognormal.quantile(0.01))
    assert normal.quantile(0.99) - 100 == pytest.approx(100 - normal.quantile(0.01))


def test_same_seed_same_samples_other_seed_other_samples() -> None:
    dist = Distribution(p50=20, p95=60)
    first = [dist.sample(random.Random(7)) for _ in range(3)]
    again = [dist.sample(random.Random(7)) for _ in range(3)]
    other = [dist.sample(random.Random(8)) for _ in range(3)]
    assert first == again
    assert first != other


def test_samples_and_quantiles_are_clamped() -> None:
    dist = Distribution(kind="normal", mean=10, stddev=20, min=5, max=30)
    rng = random.Random(3)
    samples = [dist.sample(rng) for _ in range(5_000)]
    assert min(samples) == 5 and max(samples) == 30
    assert dist.quantile(0.01) == 5 and dist.quantile(0.999) == 30


@pytest.mark.parametrize("fields, message", [
    ({"p50": 100, "p95": 50}, "p95 (50.0) is below p50 (100.0)"),
    ({"p50": 100}, "p50 and p95 go together"),
    ({"mean": 10}, "mean and stddev go together"),
    ({"p50": 10, "p95": 20, "mean": 10, "stddev": 1}, "either p50 and p95, or mean and stddev"),
    ({}, "either p50 and p95, or mean and stddev"),
    ({"p50": 10, "p95": 20, "min": 5, "max": 1}, "max (1.0) is below min (5.0)"),
    ({"kind": "uniform", "p50": 10, "p95": 20}, "Input should be 'normal' or 'lognormal'"),
    ({"p50": -1, "p95": 20}, "greater than 0"),
])
def test_invalid_distributions_say_why(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Distribution(**fields)


# --- the pacer ---------------------------------------------------------------------------------

class FakeTime:
    """A clock that moves only when slept on; records every sleep in `log`, with `late` oversleep."""

    def __init__(self, log: list, late: float = 0.0, frozen: bool = False) -> None:
        self.now = 1000.0
        self.log = log
        self.late = late
        self.frozen = frozen  # a clock that stands still: each sleep is the time from the start to its target

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.log.append(("sleep", round(seconds * 1000, 6)))
        if not self.frozen:
            self.now += seconds + self.late


def fixed(ms: float) -> Distribution:
    return Distribution(kind="normal", mean=ms, stddev=0)


def prompt(timing: Timing | None, input_tokens: int = 0, seed: int | None = 1, model: str = "m") -> Prompt:
    return Prompt(model=model, profile=Profile(id=model, timing=timing), turns=[], input_tokens=input_tokens,
                  seed=seed)


TIMING = Timing(ttft_ms=fixed(100), itl_ms=fixed(10), prefill_tokens_per_s=1000, reasoning_tokens_per_s=500)
FINISH = Finish("stop", Usage(1, 1))


def drain(deltas: Iterator, log: list) -> None:
    for delta in deltas:
        log.append(("delta", delta))


def test_speed_zero_never_waits_and_returns_the_deltas_untouched() -> None:
    def forbidden(_: float) -> None:
        raise AssertionError("slept at speed 0")

    deltas = iter([TextDelta("a"), FINISH])
    assert Pacer(0, sleep=forbidden).pace(deltas, prompt(TIMING)) is deltas
    assert Pacer(1, sleep=forbidden).pace(deltas, prompt(TIMING), speed=0) is deltas  # per-request override
    assert Pacer(1, sleep=forbidden).pace(deltas, prompt(None)) is deltas  # a profile without timing


def test_every_wait_comes_before_its_delta_in_order() -> None:
    log: list = []
    fake = FakeTime(log)
    deltas = [ReasoningDelta(tokens=16), ReasoningDelta(tokens=5), ReasoningDelta(summary="Thought."),
              TextDelta("Hello"), TextDelta(" wor", tokens=2), ToolCallStart("call_1", "f"), ToolArgsDelta("{}"),
              FINISH]
    drain(Pacer(1, sleep=fake.sleep, clock=fake.clock).pace(iter(deltas), prompt(TIMING, input_tokens=50)), log)
    assert log == [
        ("sleep", 100 + 50 + 30),  # TTFT + 50 input tokens at 1000/s + 15 more reasoning tokens at 500/s
        ("delta", deltas[0]),
        ("sleep", 10), ("delta", deltas[1]),  # 5 reasoning tokens at 500/s
        ("sleep", 10), ("delta", deltas[2]),  # a summary is visible: one inter-token latency
        ("sleep", 10), ("delta", deltas[3]),
        ("sleep", 20), ("delta", deltas[4]),  # two merged tokens
        ("delta", deltas[5]),  # a tool call's start takes no time of its own
        ("sleep", 10), ("delta", deltas[6]),
        ("delta", deltas[7]),
    ]


def test_first_visible_token_is_covered_by_the_ttft() -> None:
    log: list = []
    fake = FakeTime(log)
    deltas = [TextDelta("a"), TextDelta("b"), FINISH]
    drain(Pacer(1, sleep=fake.sleep, clock=fake.clock).pace(iter(deltas), prompt(TIMING)), log)
    assert log == [("sleep", 100), ("delta", deltas[0]), ("sleep", 10), ("delta", deltas[1]), ("delta", FINISH)]


@pytest.mark.parametrize("speed, expected", [(1, [100, 10, 10]), (10, [10, 1, 1]), (0.5, [200, 20, 20])])
def test_speed_divides_every_wait(speed: float, expected: list[float]) -> None:
    log: list = []
    fake = FakeTime(log)
    pacer = Pacer(speed, sleep=fake.sleep, clock=fake.clock)
    drain(pacer.pace(iter([TextDelta("a"), TextDelta("b"), TextDelta("c"), FINISH]), prompt(TIMING)), log)
    assert [ms for kind, ms in log if kind == "sleep"] == pytest.approx(expected)


def test_request_speed_overrides_the_servers() -> None:
    log: list = []
    fake = FakeTime(log)
    pacer = Pacer(1, sleep=fake.sleep, clock=fake.clock)
    drain(pacer.pace(iter([TextDelta("a"), TextDelta("b"), FINISH]), prompt(TIMING), speed=4), log)
    assert [ms for kind, ms in log if kind == "sleep"] == pytest.approx([25, 2.5])


def test_late_wake_ups_shorten_the_next_wait_and_big_stalls_are_not_repaid_in_a_burst() -> None:
    log: list = []
    fake = FakeTime(log, late=0.004)  # every sleep overruns by 4 ms
    pacer = Pacer(1, sleep=fake.sleep, clock=fake.clock)
    drain(pacer.pace(iter([TextDelta("a"), TextDelta("b"), TextDelta("c"), FINISH]), prompt(TIMING)), log)
    assert [ms for kind, ms in log if kind == "sleep"] == pytest.approx([100, 6, 6])

    log.clear()
    fake.late = 0.015  # an overrun longer than the next gap: that gap is skipped, the schedule restarts
    drain(pacer.pace(iter([TextDelta("a"), TextDelta("b"), TextDelta("c"), FINISH]), prompt(TIMING)), log)
    assert [ms for kind, ms in log if kind == "sleep"] == pytest.approx([100, 10])


def test_seeded_requests_wait_the_same_and_unseeded_ones_vary() -> None:
    timing = Timing(ttft_ms=Distribution(p50=300, p95=900), itl_ms=Distribution(p50=20, p95=60),
                    prefill_tokens_per_s=1000, reasoning_tokens_per_s=100)

    def waits(seed: int | None) -> list:
        log: list = []
        fake = FakeTime(log)
        deltas = iter([TextDelta("x")] * 20 + [FINISH])
        drain(Pacer(1, sleep=fake.sleep, clock=fake.clock).pace(deltas, prompt(timing, seed=seed)), log)
        return [ms for kind, ms in log if kind == "sleep"]

    assert waits(42) == waits(42)
    assert waits(42) != waits(43)
    assert waits(None) != waits(None)


def test_latency_grows_with_the_sequences_running() -> None:
    timing = TIMING.model_copy(update={"concurrency": Concurrency(max_sequences=4, slowdown_per_sequence=0.5)})
    log: list = []
    fake = FakeTime(log, frozen=True)
    pacer = Pacer(1, sleep=fake.sleep, clock=fake.clock)
    first = pacer.pace(iter([TextDelta("a"), TextDelta("b"), FINISH]), prompt(timing))
    second = pacer.pace(iter([TextDelta("a"), TextDelta("b"), FINISH]), prompt(timing))
    next(first)  # alone: TTFT 100 ms
    next(second)  # two running: every wait x1.5, TTFT 150 ms
    next(first)  # two running: 100 + 10 x1.5
    list(first)  # first ends
    list(second)  # alone again: 150 + 10
    assert [ms for kind, ms in log if kind == "sleep"] == pytest.approx([100, 150, 115, 160])
    assert pacer.loads["m"].running == 0


def test_requests_past_the_limit_queue_until_a_sequence_ends() -> None:
    timing = TIMING.model_copy(update={"concurrency": Concurrency(max_sequences=1)})
    log: list = []
    fake = FakeTime(log)
    pacer = Pacer(1, sleep=lambda s: None, clock=fake.clock)
    first = pacer.pace(iter([TextDelta("a"), TextDelta("b"), FINISH]), prompt(timing))
    second = pacer.pace(iter([TextDelta("c"), FINISH]), prompt(timing))
    next(first)
    waiter = threading.Thread(target=lambda: log.append(("second", next(second).text)))
    waiter.start()
    load = pacer.loads["m"]
    deadline = time.monotonic() + 30
    while load.waiting == 0:  # until the second request has reached the queue
        assert time.monotonic() < deadline, "the second request never queued"
        time.sleep(0.001)
    log.append(("first", next(first).text))
    first.close()  # a client that goes away frees its slot too
    waiter.join(timeout=10)
    assert log == [("first", "b"), ("second", "c")]
    assert load.running == 1 and load.waiting == 0
    second.close()
    assert load.running == 0


def test_each_model_has_its_own_queue() -> None:
    timing = TIMING.model_copy(update={"concurrency": Concurrency(max_sequences=1)})
    pacer = Pacer(1, sleep=lambda s: None)
    a = pacer.pace(iter([TextDelta("a"), FINISH]), prompt(timing, model="one"))
    b = pacer.pace(iter([TextDelta("b"), FINISH]), prompt(timing, model="two"))
    assert next(a).text == "a" and next(b).text == "b"  # the second would block forever if the queue were shared


def test_the_ttft_counts_from_when_the_request_was_ready_or_left_the_queue() -> None:
    log: list = []
    fake = FakeTime(log)
    pacer = Pacer(1, sleep=fake.sleep, clock=fake.clock)
    deltas = pacer.pace(iter([TextDelta("a"), FINISH]), prompt(TIMING))
    fake.now += 0.030  # 30 ms go by writing the first events before the first delta is asked for
    drain(deltas, log)
    assert log[0] == ("sleep", 70)

    queued_timing = TIMING.model_copy(update={"concurrency": Concurrency(max_sequences=1)})
    holder = pacer.pace(iter([TextDelta("a"), FINISH]), prompt(queued_timing))
    next(holder)
    log.clear()
    waiter = threading.Thread(target=drain, args=(pacer.pace(iter([TextDelta("b"), FINISH]), prompt(queued_timing)),
                                                  log))
    waiter.start()
    deadline = time.monotonic() + 30
    while pacer.loads["m"].waiting == 0:
        assert time.monotonic() < deadline, "the request never queued"
        time.sleep(0.001)
    fake.now += 0.030  # 30 ms in the queue
    holder.close()
    waiter.join(timeout=30)
    assert log[0] == ("sleep", 100)  # the whole TTFT, after the queue


def test_streaming_and_non_streaming_wait_the_same_under_a_seed() -> None:
    from llmsim.app import create_app
    from llmsim.config import Settings

    app = create_app(Settings(speed=1))
    log: list = []
    fake = FakeTime(log)
    app.extensions["llmsim"].pipeline.pacer = Pacer(1, sleep=fake.sleep, clock=fake.clock)
    client = app.test_client()
    body = {"model": "gpt-4o-mini", "input": "Tell me a story"}
    answer = client.post("/v1/responses", json=body, headers={"X-LLMSim-Seed": "3"}).get_json()
    json_waits = [ms for _, ms in log]
    log.clear()
    stream = client.post("/v1/responses", json={**body, "stream": True}, headers={"X-LLMSim-Seed": "3"}).data
    assert answer["status"] == "completed" and json_waits == [ms for _, ms in log]
    assert len(json_waits) == stream.count(b"event: response.output_text.delta\n")  # TTFT, then one per token
    assert json_waits[0] >= 150 and all(1 <= ms <= 1000 for ms in json_waits[1:])  # gpt-4o-mini's clamps


@pytest.mark.parametrize("spec", [
    {"kind": "lognormal", "p50": 9, "p95": 22, "min": 1, "max": 30},
    {"kind": "normal", "mean": 20, "stddev": 15, "min": 5},
])
def test_samples_at_once_are_the_samples_one_by_one(spec: dict) -> None:
    """A paced run draws its chunks' gaps together: the same values, from the same draws, as one at a time."""
    distribution = Distribution(**spec)
    one, many = random.Random(5), random.Random(5)
    assert [distribution.sample(one) for _ in range(500)] == distribution.samples(many, 500)
    assert one.random() == many.random()
