"""Profiles as shipped and as users write them; strict models, cost reporting and the speed header."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest

from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.testing import ServerProcess
from llmsim.timing.pricing import COST_HEADER
from llmsim.timing.profiles import ProfileError, load_catalog

ISSUE_MODELS = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini", "gpt-5-nano",
                "gpt-5.1", "gpt-5.2", "o1", "o3", "o3-mini", "o4-mini"]

SLOW_MODEL = """\
models:
  - id: slow-model
    timing:
      ttft_ms: {kind: normal, mean: 3600000, stddev: 0}  # an hour: only speed 0 gets an answer in a test
      itl_ms: {p50: 10, p95: 20}
      prefill_tokens_per_s: 1000
      reasoning_tokens_per_s: 100
    pricing: {input: 1.0, cached_input: 0.5, output: 4.0}
"""


def write_profile(directory: Path, text: str, name: str = "custom.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def test_every_model_of_the_issue_has_timing_and_prices() -> None:
    catalog = load_catalog([DEFAULT_PROFILES_DIR])
    for name in ISSUE_MODELS + ["default"]:
        profile = catalog.get(name)
        assert profile is not None, name
        assert profile.timing is not None and profile.pricing is not None, name
        assert profile.timing.itl_ms.quantile(0.5) < profile.timing.ttft_ms.quantile(0.5), name
        assert profile.pricing.output >= profile.pricing.input, name
    assert catalog.get("o3").reasoning is not None and catalog.get("gpt-4o").reasoning is None


PRICING_PAGES = ("https://platform.openai.com/docs/pricing", "https://platform.claude.com/docs/en/about-claude/pricing",
                 "https://ai.google.dev/gemini-api/docs/pricing")


def test_every_number_in_a_shipped_profile_cites_its_source() -> None:
    for path in DEFAULT_PROFILES_DIR.glob("*.yaml"):
        text = path.read_text()
        if "pricing:" in text and path.name != "default.yaml":  # default.yaml points at gpt-4o.yaml
            assert any(page in text for page in PRICING_PAGES), path.name
        if "timing:" in text and path.name != "default.yaml":  # embedding models have prices and no timing
            assert "https://artificialanalysis.ai/" in text, path.name


@pytest.mark.parametrize("timing, field", [
    ("{ttft_ms: {p50: 500, p95: 100}, itl_ms: {p50: 10, p95: 20}, prefill_tokens_per_s: 1, reasoning_tokens_per_s: 1}",
     "timing.ttft_ms: Value error, p95 (100.0) is below p50 (500.0)"),
    ("{ttft_ms: {p50: 500, p95: 900}, itl_ms: {p50: 10, p95: 20}, prefill_tokens_per_s: 0, reasoning_tokens_per_s: 1}",
     "timing.prefill_tokens_per_s: Input should be greater than 0"),
    ("{ttft_ms: {p50: 500, p95: 900}, itl_ms: {p50: 10, p95: 20}, reasoning_tokens_per_s: 1}",
     "timing.prefill_tokens_per_s: Field required"),
    ("{ttft_ms: {p50: 500, p95: 900}, itl_ms: {p50: 10, p95: 20, p99: 30}, prefill_tokens_per_s: 1, "
     "reasoning_tokens_per_s: 1}", "timing.itl_ms.p99: Extra inputs are not permitted"),
    ("{ttft_ms: {p50: 500, p95: 900}, itl_ms: {p50: 10, p95: 20}, prefill_tokens_per_s: 1, reasoning_tokens_per_s: 1,"
     " concurrency: {max_sequences: 0}}", "timing.concurrency.max_sequences: Input should be greater than 0"),
])
def test_a_bad_profile_names_file_model_and_field(tmp_path: Path, timing: str, field: str) -> None:
    path = write_profile(tmp_path, f"models:\n  - id: ok\n  - id: broken\n    timing: {timing}\n")
    with pytest.raises(ProfileError) as error:
        load_catalog([tmp_path])
    assert str(error.value).startswith(f"{path}: models[1] (broken): {field}")


def test_bad_prices_are_named_too(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "models:\n  - id: m\n    pricing: {input: -1, output: 2}\n")
    with pytest.raises(ProfileError, match="pricing.input: Input should be greater than or equal to 0"):
        load_catalog([tmp_path])
    path.write_text("models:\n  - id: m\n    pricing: {input: 1}\n")
    with pytest.raises(ProfileError, match="pricing.output: Field required"):
        load_catalog([tmp_path])


def test_a_bad_profile_stops_the_server_with_the_file_and_field(tmp_path: Path) -> None:
    path = write_profile(tmp_path, "models:\n  - id: m\n    timing: {ttft_ms: {p50: 5}}\n")
    with pytest.raises(RuntimeError) as error:
        ServerProcess("--profiles-dir", str(tmp_path)).start()
    message = str(error.value)
    assert "exited with 2" in message
    assert f"{path}: models[0] (m): timing.ttft_ms: Value error, p50 and p95 go together" in message


def test_a_negative_speed_stops_the_server() -> None:
    with pytest.raises(RuntimeError, match="speed must be 0 or a number from 0.01 to 10000"):
        ServerProcess("--speed", "-1").start()


@pytest.fixture(scope="module")
def slow_profiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_profile(tmp_path_factory.mktemp("profiles"), SLOW_MODEL).parent


@pytest.fixture
def slow_server(shared_server: Callable[..., ServerProcess], slow_profiles: Path) -> ServerProcess:
    """The module's one paced server with a user's profiles directory holding SLOW_MODEL (a start costs a core
    1.5 s): the test that adds a model and the speed header's test use it."""
    return shared_server("--speed", "1", "--profiles-dir", str(slow_profiles))


# The strict server: the environment variable (the flag, --strict-models, is tested in test_validation.py).
STRICT = {"LLMSIM_STRICT_MODELS": "1"}


def test_a_users_profiles_directory_adds_models(slow_server: ServerProcess) -> None:
    server = slow_server
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    assert client.models.retrieve("slow-model").id == "slow-model"
    assert client.models.retrieve("gpt-4o").id == "gpt-4o"  # the shipped ones stay


def test_unknown_models_use_the_default_profile_unless_strict(client: openai.OpenAI,
                                                              shared_server: Callable[..., ServerProcess]) -> None:
    assert client.responses.create(model="my-finetune", input="hi").model == "my-finetune"

    strict = openai.OpenAI(base_url=shared_server(env=STRICT).base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as error:
        strict.responses.create(model="my-finetune", input="hi")
    assert error.value.status_code == 400
    assert error.value.body == {"message": "The requested model 'my-finetune' does not exist.",
                                "type": "invalid_request_error", "param": "model", "code": "model_not_found"}
    with pytest.raises(openai.BadRequestError):
        strict.responses.create(model="my-finetune", input="hi", stream=True)
    assert strict.responses.create(model="gpt-4o-2024-08-06", input="hi").status == "completed"  # snapshots known


def test_strict_models_reads_its_environment_variable(shared_server: Callable[..., ServerProcess]) -> None:
    strict = openai.OpenAI(base_url=shared_server(env=STRICT).base_url, api_key="sk-test",
                           max_retries=0)
    with pytest.raises(openai.BadRequestError) as error:
        strict.responses.create(model="nope", input="hi")
    assert error.value.code == "model_not_found"


def expected_cost(usage: dict, input_price: float, cached_price: float, output_price: float) -> float:
    cached = usage["input_tokens_details"]["cached_tokens"]
    return ((usage["input_tokens"] - cached) * input_price + cached * cached_price
            + usage["output_tokens"] * output_price) / 1e6


def test_non_streaming_responses_report_their_cost_in_a_header(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model="o3", input="What is 2+2?", reasoning={"effort": "high"})
    response = raw.parse()
    usage = response.usage.model_dump()
    assert usage["output_tokens_details"]["reasoning_tokens"] > 0  # reasoning bills as output
    assert float(raw.headers[COST_HEADER]) == pytest.approx(expected_cost(usage, 2.00, 0.50, 8.00), abs=1e-8)
    body = raw.http_response.json()  # the body stays the SDK's Response, nothing added (the words may say "cost")
    assert not [key for key in (*body, *body["usage"]) if "cost" in key]

    retrieved = client.responses.with_raw_response.retrieve(response.id)
    assert retrieved.headers[COST_HEADER] == raw.headers[COST_HEADER]


def test_unknown_models_cost_what_the_default_profile_costs(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model="my-finetune", input="hi")
    usage = raw.parse().usage.model_dump()
    assert float(raw.headers[COST_HEADER]) == pytest.approx(expected_cost(usage, 2.50, 1.25, 10.00), abs=1e-8)


def test_streams_report_their_cost_in_a_closing_comment(client: openai.OpenAI, server: ServerProcess) -> None:
    body = {"model": "gpt-4o-mini", "input": "Tell me a story", "stream": True}
    with httpx.stream("POST", f"{server.base_url}/responses", json=body, timeout=30) as stream:
        assert COST_HEADER not in stream.headers  # unknown when the headers go out
        text = stream.read().decode()
    events, _, trailer = text.rpartition("\n\n: ")
    assert '"type":"response.completed"' in events.rsplit("event: ", 1)[-1]
    name, _, value = trailer.strip().partition(": ")
    assert name == COST_HEADER
    completed = client.responses.retrieve(events.split('"id":"', 1)[1].split('"', 1)[0])
    assert float(value) == pytest.approx(expected_cost(completed.usage.model_dump(), 0.15, 0.075, 0.60), abs=1e-8)

    with client.responses.stream(model="gpt-4o-mini", input="Tell me a story") as sdk_stream:  # SDKs skip comments
        kinds = [event.type for event in sdk_stream]
    assert kinds[-1] == "response.completed"


def test_speed_header_zero_answers_at_once_on_a_paced_server(slow_server: ServerProcess) -> None:
    server = slow_server
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=60)
    response = client.responses.create(model="slow-model", input="hi", extra_headers={"X-LLMSim-Speed": "0"})
    assert response.status == "completed"  # at the server's speed this would take an hour
    with client.responses.stream(model="slow-model", input="hi", extra_headers={"X-LLMSim-Speed": "0"}) as stream:
        assert stream.get_final_response().status == "completed"


@pytest.mark.parametrize("value", ["fast", "-1", "nan", "inf", "1e-9", "1e-300", "0.001", "1e5"])
def test_a_bad_speed_header_gets_a_400(client: openai.OpenAI, value: str) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model="gpt-4o", input="hi", extra_headers={"X-LLMSim-Speed": value})
    assert error.value.body == {"message": f"Invalid X-LLMSim-Speed header: expected 0 or a number from 0.01 to 10000, "
                                           f"got '{value}'.",
                                "type": "invalid_request_error", "param": "X-LLMSim-Speed", "code": "invalid_value"}


def test_a_users_profile_replaces_a_shipped_model_of_the_same_id(tmp_path: Path) -> None:
    write_profile(tmp_path, "models:\n  - id: gpt-4o\n    pricing: {input: 1, output: 2}\n")
    catalog = load_catalog([DEFAULT_PROFILES_DIR, tmp_path])
    assert [p.id for p in catalog.listed()].count("gpt-4o") == 1
    assert catalog.get("gpt-4o").pricing.input == 1
    assert catalog.get("chatgpt-4o-latest") is None  # the shipped entry's aliases went with it


def test_a_users_families_place_names_first_and_bad_ones_are_named(tmp_path: Path) -> None:
    """profiles/families.yaml places unknown names by family; a profiles directory of one's own may add families,
    tried before the shipped ones, and a family whose regular expression is broken stops start-up, named."""
    write_profile(tmp_path, "families:\n  - match: 'gpt-6-house'\n    like: gpt-4o\n    reasons: false\n"
                            "    known: [gpt-6-house]\n")
    catalog = load_catalog([DEFAULT_PROFILES_DIR, tmp_path], strict=True)
    assert catalog.resolve("gpt-6-house").reasoning is None  # the user's family wins over gpt-6*
    assert catalog.resolve("gpt-6-sol").reasoning is not None
    assert catalog.resolve("gpt-6-house").pricing == catalog.resolve("gpt-4o").pricing
    write_profile(tmp_path, "families:\n  - match: 'gpt-(6'\n    like: gpt-4o\n", name="broken.yaml")
    with pytest.raises(ProfileError, match=r"broken\.yaml.*families\.0\.match"):
        load_catalog([tmp_path])
