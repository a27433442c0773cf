"""RPM/TPM/ITPM/OTPM token buckets: enforced over the window (an injected clock, no waiting) and over the wire."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from llmsim.chaos.ratelimit import Charge, Limits, RateLimitConfig, RateLimiter, duration
from llmsim.chaos.rules import fault_config
from llmsim.config import Settings
from llmsim.testing import ServerProcess
from stateful import Clock

KEY = ("sk-test", "gpt-4o")
DURATION = re.compile(r"^(\d+ms|(\d+h)?(\d+m)?\d+(\.\d+)?s)$")


def test_rpm_is_enforced_over_the_minute() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = Limits(rpm=3)
    assert all(limiter.acquire(KEY, limits, 0).allowed for _ in range(3))
    rejected = limiter.acquire(KEY, limits, 0)
    assert rejected.exceeded == "requests" and rejected.retry_after == pytest.approx(20.0)
    headers = rejected.error("gpt-4o").headers
    assert headers["retry-after"] == "20" and headers["retry-after-ms"] == "20000"
    assert headers["x-ratelimit-remaining-requests"] == "0" and headers["x-ratelimit-reset-requests"] == "1m0s"
    clock.now = 1019.9
    assert not limiter.acquire(KEY, limits, 0).allowed
    clock.now = 1020.0
    assert limiter.acquire(KEY, limits, 0).allowed  # one request's worth refilled, no more
    assert not limiter.acquire(KEY, limits, 0).allowed
    clock.now += 60
    verdict = limiter.acquire(KEY, limits, 0)
    assert verdict.headers() == {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "2",
                                 "x-ratelimit-reset-requests": "20s"}
    assert limiter.rejected == 3


def test_tpm_is_enforced_and_settled_to_real_usage() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = Limits(tpm=1200)
    assert limiter.acquire(KEY, limits, 700).allowed
    rejected = limiter.acquire(KEY, limits, 700)
    assert rejected.exceeded == "tokens" and rejected.retry_after == pytest.approx(10.0)  # 200 more at 20/s
    error = rejected.error("gpt-4o")
    assert error.status == 429 and error.type == "tokens" and error.code == "rate_limit_exceeded"
    assert "on tokens per min (TPM): Limit 1200, Used 700, Requested 700. Please try again in 10s." in error.message
    limiter.settle(KEY, limits, -400)  # the response used 400 tokens less than it reserved
    assert limiter.acquire(KEY, limits, 700).allowed
    verdict = limiter.acquire(KEY, limits, 100)
    assert verdict.headers()["x-ratelimit-remaining-tokens"] == "100"
    assert verdict.headers()["x-ratelimit-reset-tokens"] == "55s"


def test_a_request_larger_than_the_limit_is_rejected_without_retry_after() -> None:
    verdict = RateLimiter(Clock()).acquire(KEY, Limits(tpm=100), 500)
    error = verdict.error("gpt-4o")
    assert verdict.retry_after is None and "retry-after" not in error.headers
    assert error.message.startswith("Request too large for gpt-4o")


def test_buckets_are_per_api_key_and_model() -> None:
    limiter = RateLimiter(Clock())
    limits = Limits(rpm=1)
    assert limiter.acquire(("a", "gpt-4o"), limits, 0).allowed
    assert not limiter.acquire(("a", "gpt-4o"), limits, 0).allowed
    assert limiter.acquire(("b", "gpt-4o"), limits, 0).allowed
    assert limiter.acquire(("a", "gpt-5"), limits, 0).allowed
    limiter.reset()
    assert limiter.acquire(("a", "gpt-4o"), limits, 0).allowed


def test_limits_resolve_config_model_then_profile_then_defaults() -> None:
    config = RateLimitConfig(rpm=10, tpm=1000, models={"gpt-4o": Limits(rpm=5)})
    assert config.resolve(("gpt-4o",), Limits(rpm=7, tpm=700)) == Limits(rpm=5, tpm=700)
    assert config.resolve(("gpt-5",), Limits(rpm=7)) == Limits(rpm=7, tpm=1000)
    assert config.resolve(("gpt-5",)) == Limits(rpm=10, tpm=1000)
    assert not RateLimitConfig().resolve(("gpt-5",))


def test_itpm_and_otpm_count_as_anthropic_counts() -> None:
    """Input at admission (a cache read not counted), output reserved from max_tokens and settled to the output."""
    clock = Clock()
    limiter = RateLimiter(clock)
    limits = Limits(itpm=1000, otpm=600)
    first = limiter.acquire(KEY, limits, Charge(input=300, output=500, cached=100))
    assert first.allowed
    assert (first.buckets["input_tokens"].level, first.buckets["output_tokens"].level) == (800, 100)
    refused = limiter.acquire(KEY, limits, Charge(input=10, output=200))  # 100 output tokens left: 10 s to 200
    assert refused.exceeded == "output_tokens" and refused.retry_after == pytest.approx(10.0)
    error = refused.error("claude-sonnet-4-6")
    assert error.status == 429 and error.type == "tokens" and error.headers["retry-after"] == "10"
    assert "on output tokens per min (OTPM): Limit 600, Used 500, Requested 200" in error.message
    assert refused.buckets["input_tokens"].level == 800  # a refused request takes from no bucket
    limiter.settle(KEY, limits, Charge(input=0, output=40 - 500))  # it made 40 of its 500
    second = limiter.acquire(KEY, limits, Charge(input=900, output=200))
    assert second.exceeded == "input_tokens" and second.retry_after == pytest.approx(6.0)  # 100 more at 16.7/s
    assert limiter.acquire(KEY, limits, Charge(input=800, output=200)).allowed
    assert limiter.acquire(KEY, limits, Charge(input=0, output=2000)).retry_after is None  # over the whole limit


def test_headers_fold_on_openai_and_split_on_messages() -> None:
    limiter = RateLimiter(Clock())
    verdict = limiter.acquire(KEY, Limits(tpm=10_000, itpm=2000, otpm=1000), Charge(input=100, output=900))
    assert verdict.headers() == {  # the bucket with the fewest tokens left: OTPM's
        "x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "54s"}
    verdict.directional = True
    headers = verdict.headers()
    assert (headers["x-ratelimit-limit-input-tokens"], headers["x-ratelimit-remaining-input-tokens"]) == (
        "2000", "1900")
    assert (headers["x-ratelimit-limit-output-tokens"], headers["x-ratelimit-remaining-output-tokens"]) == (
        "1000", "100")
    tpm_only = limiter.acquire(("sk-other", "gpt-4o"), Limits(tpm=500), Charge(input=100, output=50))
    tpm_only.directional = True  # TPM counts both directions: each reports it
    assert tpm_only.headers()["x-ratelimit-remaining-input-tokens"] == "350"
    assert tpm_only.headers()["x-ratelimit-remaining-output-tokens"] == "350"


def test_itpm_and_otpm_come_from_flags_files_and_profiles() -> None:
    config = RateLimitConfig(itpm=1000, models={"claude-sonnet-4-6": Limits(otpm=50)})
    assert config.resolve(("claude-sonnet-4-6",), Limits(itpm=70, tpm=9)) == Limits(tpm=9, itpm=70, otpm=50)
    assert config.resolve(("gpt-5",)) == Limits(itpm=1000)
    settings = Settings(rpm=5, itpm=4000, otpm=800)
    assert fault_config(settings).rate_limits.resolve(("any",)) == Limits(rpm=5, itpm=4000, otpm=800)


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (0.0004, "1ms"), (0.12, "120ms"), (1.5, "1.5s"), (20, "20s"),
                                           (360, "6m0s"), (86.4, "1m26.4s"), (3723, "1h2m3s")])
def test_durations_use_the_api_format(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.fixture(scope="module")
def limited_profiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("profiles")
    (directory / "limited.yaml").write_text("models:\n  - id: limited-model\n    rate_limits: {rpm: 1}\n")
    return directory


@pytest.fixture
def limited_server(shared_server: Callable[..., ServerProcess], limited_profiles: Path) -> ServerProcess:
    """One server for the RPM test and the profile's (a start costs a core 1.5 s): RPM 2 from the environment, and
    a profiles directory where limited-model has RPM 1. Buckets are per API key and model: the RPM test uses keys of
    its own, and the profile's test makes one gpt-4o request."""
    rpm = {"LLMSIM_RPM": "2"}  # the environment, as --rpm 2
    return shared_server("--profiles-dir", str(limited_profiles), env=rpm)


def test_rpm_over_the_wire(
        limited_server: ServerProcess, sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = limited_server
    client = sdk_client(server, "sk-one")
    first = client.responses.with_raw_response.create(model="gpt-4o", input="hi")
    assert first.status_code == 200
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert DURATION.match(first.headers["x-ratelimit-reset-requests"])
    assert "x-ratelimit-limit-tokens" not in first.headers  # no TPM limit set
    with client.responses.with_streaming_response.create(model="gpt-4o", input="hi", stream=True) as second:
        assert second.headers["x-ratelimit-remaining-requests"] == "0"  # streams carry them too
    with pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="gpt-4o", input="hi")
    assert caught.value.code == "rate_limit_exceeded" and caught.value.body["type"] == "requests"  # type: ignore[index]
    headers = caught.value.response.headers
    assert 0 < int(headers["retry-after-ms"]) <= 30_000 and int(headers["retry-after"]) >= 1
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert "on requests per min (RPM): Limit 2, Used 2, Requested 1" in caught.value.message
    other_key = sdk_client(server, "sk-two")
    assert other_key.responses.create(model="gpt-4o", input="hi").status == "completed"
    assert client.responses.create(model="gpt-4.1", input="hi").status == "completed"  # per model too
    with pytest.raises(openai.BadRequestError):  # a request that fails validation takes nothing
        client.responses.create(model="gpt-4o", input="hi", temperature=9)
    models = client.models.with_raw_response.list()
    assert "x-ratelimit-limit-requests" not in models.headers  # only generating endpoints are limited


def test_tpm_over_the_wire(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = start_server("--tpm", "100")
    client = sdk_client(server)
    raw = client.responses.with_raw_response.create(model="gpt-4o", input="hi", max_output_tokens=60)
    response = raw.parse()
    assert raw.headers["x-ratelimit-limit-tokens"] == "100"
    reserved = response.usage.input_tokens + 60
    assert raw.headers["x-ratelimit-remaining-tokens"] == str(100 - reserved)
    with pytest.raises(openai.RateLimitError) as caught:  # the first used > 24 output tokens: < 68 are left
        client.responses.create(model="gpt-4o", input="hi", max_output_tokens=60)
    assert caught.value.body["type"] == "tokens"  # type: ignore[index]
    assert "tokens per min (TPM): Limit 100" in caught.value.message
    with pytest.raises(openai.RateLimitError) as too_large:
        client.responses.create(model="gpt-4o", input="hi", max_output_tokens=500)
    assert "Request too large" in too_large.value.message


def test_profile_limits(limited_server: ServerProcess, sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = limited_server
    client = sdk_client(server)
    assert client.responses.create(model="limited-model", input="hi").status == "completed"
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="limited-model", input="hi")
    assert client.responses.create(model="gpt-4o", input="hi").status == "completed"
