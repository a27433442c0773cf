"""The mlx backend through a real server and the openai SDK, on models built here with no download:
a tiny random-weight qwen2 and a scripted model that writes tool calls and thinking on cue."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gevent
import httpx
import openai
import pytest

from llmsim.backends.mlx.backend import load_model
from llmsim.backends.mlx.fixture import build_random_model, build_scripted_model
from llmsim.backends.mlx.models import ModelSpec
from llmsim.generation import Finish, Prompt, Turn
from llmsim.testing import ServerProcess

SCRIPTS = {
    "<|s_tool|>": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    "<|s_think|>": "<think>\nFirst, add two and two. That makes four.\n</think>\n\nThe answer is 4.",
    "<|s_long|>": "one two three four five six seven eight nine ten " * 4,
    "<|s_a|>": "Alpha says the quick brown fox jumps over the lazy dog.",
    "<|s_b|>": "Bravo thinks Paris is the capital of France, and it is sunny.",
    "<|s_c|>": "Charlie asks what is the weather like in Paris today?",
    "<|s_endless|>": "again " * 3000,
}
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mlx-models")
    return {"tiny": build_random_model(root / "tiny"), "scripted": build_scripted_model(root / "scripted", SCRIPTS)}


@pytest.fixture(scope="module")
def mlx_server(models: dict[str, Path]) -> Iterator[ServerProcess]:
    flags = ["--speed", "0", "--backend", "mlx", "--trust-remote-code"]
    for alias, path in models.items():
        flags += ["--model", f"{alias}={path}"]
    with ServerProcess(*flags, startup_timeout=120) as process:
        yield process


@pytest.fixture(scope="module")
def mlx(mlx_server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=mlx_server.base_url, api_key="sk-test", max_retries=0)


def count_prompt(path: Path, messages: list[dict[str, str]], **options: object) -> int:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    return len(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                             return_dict=False, **options))


def test_models_listed_are_the_loaded_ones(mlx: openai.OpenAI) -> None:
    assert sorted(m.id for m in mlx.models.list()) == ["scripted", "tiny"]
    assert mlx.models.retrieve("tiny").owned_by == "mlx"
    with pytest.raises(openai.BadRequestError) as caught:
        mlx.responses.create(model="gpt-4o", input="Hi")
    assert caught.value.code == "model_not_found"
    assert caught.value.body["param"] == "model"  # type: ignore[index]


def test_stream_event_order_usage_and_max_tokens(mlx: openai.OpenAI, models: dict[str, Path]) -> None:
    with mlx.responses.stream(model="tiny", input="Hello there", max_output_tokens=16, temperature=0) as stream:
        events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type == "response.incomplete"
    added = [e.item.id for e in events if e.type == "response.output_item.added"]
    done = [e.item.id for e in events if e.type == "response.output_item.done"]
    assert added == done and added
    final = events[-1].response
    assert final.incomplete_details.reason == "max_output_tokens"
    assert final.usage.output_tokens == 16
    assert final.usage.input_tokens == count_prompt(models["tiny"], [{"role": "user", "content": "Hello there"}],
                                                    enable_thinking=True)


def test_stop_at_the_end_token(mlx: openai.OpenAI, models: dict[str, Path]) -> None:
    from transformers import AutoTokenizer

    response = mlx.responses.create(model="scripted", input="Say hello")
    assert response.status == "completed"
    assert response.output_text == "Hello there."
    tokenizer = AutoTokenizer.from_pretrained(str(models["scripted"]))
    assert response.usage.output_tokens == len(tokenizer.encode("Hello there.", add_special_tokens=False))
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_chat_completions_stop_sequence(mlx: openai.OpenAI) -> None:
    completion = mlx.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "Hi"}],
                                             stop=["there"])
    assert completion.choices[0].message.content == "Hello "
    assert completion.choices[0].finish_reason == "stop"


def test_chat_completions_penalties_reach_the_sampler(mlx: openai.OpenAI) -> None:
    def words(**penalty: float) -> list[str]:
        completion = mlx.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi"}],
                                                 temperature=0, max_completion_tokens=48, **penalty)
        return completion.choices[0].message.content.split()

    plain = words()
    assert words() == plain  # greedy: only a penalty can change the words
    for penalty in ({"frequency_penalty": 2.0}, {"presence_penalty": 2.0}):
        penalized = words(**penalty)
        assert penalized != plain
        assert len(set(penalized)) / max(1, len(penalized)) >= len(set(plain)) / max(1, len(plain))


def test_max_output_tokens_makes_it_incomplete(mlx: openai.OpenAI) -> None:
    response = mlx.responses.create(model="scripted", input="Count <|s_long|>", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.usage.output_tokens == 16
    assert SCRIPTS["<|s_long|>"].startswith(response.output_text)
    assert 0 < len(response.output_text) < len(SCRIPTS["<|s_long|>"].strip())


def test_tool_call_streams_and_the_conversation_goes_on(mlx: openai.OpenAI) -> None:
    with mlx.responses.stream(model="scripted", input="Weather? <|s_tool|>", tools=[WEATHER]) as stream:
        types = [e.type for e in stream]
        first = stream.get_final_response()
    assert "response.function_call_arguments.delta" in types
    assert types.index("response.function_call_arguments.done") < types.index("response.completed")
    [call] = first.output
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "get_weather", {"city": "Paris"})
    assert "response.output_text.delta" not in types  # the markup never reaches the client

    second = mlx.responses.create(model="scripted", previous_response_id=first.id, tools=[WEATHER], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 21}'}])
    assert second.output_text == "Hello there."
    # the second prompt starts with the first one and its output: that prefix comes from the KV cache
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens


def test_thinking_becomes_a_reasoning_item(mlx: openai.OpenAI) -> None:
    with mlx.responses.stream(model="scripted", input="What is 2+2? <|s_think|>",
                              reasoning={"effort": "medium", "summary": "auto"}) as stream:
        types = [e.type for e in stream]
        response = stream.get_final_response()
    reasoning, message = response.output
    assert reasoning.type == "reasoning" and message.type == "message"
    assert reasoning.content[0].text == "First, add two and two. That makes four."
    assert reasoning.summary[0].text == "First, add two and two. That makes four."
    assert response.output_text == "The answer is 4."
    assert types.index("response.reasoning_text.delta") < types.index("response.reasoning_summary_text.delta")
    assert types.index("response.reasoning_summary_text.done") < types.index("response.output_text.delta")
    usage = response.usage
    assert 0 < usage.output_tokens_details.reasoning_tokens < usage.output_tokens


def test_reasoning_effort_none_turns_thinking_off(mlx: openai.OpenAI, models: dict[str, Path]) -> None:
    on = mlx.responses.create(model="tiny", input="Hi", reasoning={"effort": "medium"}, max_output_tokens=16)
    off = mlx.responses.create(model="tiny", input="Hi", reasoning={"effort": "none"}, max_output_tokens=16,
                               temperature=0.5)
    messages = [{"role": "user", "content": "Hi"}]
    assert on.usage.input_tokens == count_prompt(models["tiny"], messages, enable_thinking=True)
    assert off.usage.input_tokens == count_prompt(models["tiny"], messages, enable_thinking=False)
    assert off.usage.input_tokens > on.usage.input_tokens  # the template closed an empty thinking block


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_json_schema_output_always_parses(mlx: openai.OpenAI, seed: str) -> None:
    """A random model writes noise; constrained decoding still makes it valid JSON of the schema."""
    import jsonschema

    schema = {"type": "object", "additionalProperties": False, "required": ["city", "temp_c", "sunny"],
              "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]},
                             "temp_c": {"type": "integer", "minimum": -30, "maximum": 50},
                             "sunny": {"type": "boolean"}}}
    response = mlx.responses.create(model="tiny", input="Weather?", max_output_tokens=64, extra_headers={
        "X-LLMSim-Seed": seed}, text={"format": {"type": "json_schema", "name": "w", "schema": schema,
                                                 "strict": True}})
    assert response.status == "completed"
    jsonschema.validate(json.loads(response.output_text), schema)


def test_concurrent_requests_do_not_mix(mlx: openai.OpenAI) -> None:
    """The scripted model keeps its script in the model object: interleaved steps would garble it."""
    triggers = ["<|s_a|>", "<|s_b|>", "<|s_c|>"] * 2

    def ask(trigger: str) -> str:
        with mlx.responses.stream(model="scripted", input=f"Go {trigger}") as stream:
            return "".join(e.delta for e in stream if e.type == "response.output_text.delta")

    with ThreadPoolExecutor(len(triggers)) as pool:
        answers = list(pool.map(ask, triggers))
    assert answers == [SCRIPTS[t] for t in triggers]


def test_client_disconnect_frees_the_model(mlx: openai.OpenAI) -> None:
    with mlx.responses.stream(model="tiny", input="Write forever", max_output_tokens=4000) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                break
    response = mlx.responses.create(model="scripted", input="Say hello")
    assert response.output_text == "Hello there."


def test_cancel_stops_a_background_generation(mlx: openai.OpenAI) -> None:
    response = mlx.responses.create(model="scripted", input="Go <|s_endless|>", background=True)
    while mlx.responses.retrieve(response.id).status == "queued":
        time.sleep(0.01)
    cancelled = mlx.responses.cancel(response.id)
    assert cancelled.status == "cancelled"
    assert len(cancelled.output_text) < len(SCRIPTS["<|s_endless|>"].strip())
    assert mlx.responses.create(model="scripted", input="Say hello").output_text == "Hello there."
    # the same prompt twice: the second reuses all but its last token from the KV cache
    again = mlx.responses.create(model="scripted", input="Say hello")
    assert again.output_text == "Hello there." and again.usage.input_tokens_details.cached_tokens > 0


def test_closing_the_generator_stops_generation(models: dict[str, Path]) -> None:
    loaded = load_model(ModelSpec("tiny", str(models["tiny"])))
    from llmsim.backends.mlx.backend import MLXBackend

    backend = MLXBackend([loaded])
    prompt = Prompt(model="tiny", profile=loaded.profile, turns=[Turn("user", "Hello")], input_tokens=0,
                    temperature=0.0, max_output_tokens=2000)
    prompt_tokens = len(backend.render(loaded, prompt)[0])
    deltas = backend.generate(prompt)
    for _ in range(3):
        next(deltas)
    deltas.close()
    for _ in range(500):  # the scheduler frees the slot at its next step
        if not loaded.scheduler.running:
            break
        gevent.sleep(0.01)
    assert loaded.scheduler.running == 0
    assert prompt_tokens < len(loaded.cache.tokens) < prompt_tokens + 10  # stopped, not run to 2000 tokens
    finish = [d for d in backend.generate(prompt) if isinstance(d, Finish)]
    assert finish[0].usage.cached_tokens == prompt_tokens - 1  # the same prompt again: all but its last token
    assert finish[0].usage.output_tokens > 3


@pytest.mark.parametrize("flags, offline, message", [
    (["--model", "/nonexistent/model-dir"], True, "not a directory and not a Hugging Face repo id"),
    (["--model", "small=mlx-community/not-cached"], True,
     "mlx-community/not-cached: not in the Hugging Face cache ({hub}) and this machine is offline; get it with "
     "`hf download mlx-community/not-cached` on a connected machine, then copy its cache here (or point HF_HOME at "
     "it), or give a model directory: --model NAME=PATH"),
    (["--allow-download", "--model", "mlx-community/not-cached"], True, "and this machine is offline; get it with "
     "`hf download mlx-community/not-cached` on a connected machine"),
    (["--model", "small=mlx-community/not-cached"], False, "not in the Hugging Face cache ({hub}); get it with "
     "`hf download mlx-community/not-cached`, or pass --allow-download to fetch it, or give a model directory"),
    ([], True, "needs at least one --model"),
])
def test_bad_model_flags_stop_the_server_with_one_line(flags: list[str], offline: bool, message: str,
                                                        tmp_path: Path) -> None:
    """A model that is not here: exit 2 and one line saying how to get it (no traceback, nothing fetched)."""
    env = {"HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **({"HF_HUB_OFFLINE": "1"} if offline else {})}
    result = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--backend", "mlx", *flags],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("llmsim: "), result.stderr
    assert message.format(hub=tmp_path / "hub") in result.stderr


def test_loading_a_model_says_so_with_its_size_and_time(models: dict[str, Path],
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    load_model(ModelSpec("tiny", str(models["tiny"])))
    lines = capfd.readouterr().err.splitlines()
    assert re.fullmatch(r"llmsim: \[\d+\] loading tiny \(\d+\.\d\d GB of weights\) from .*tiny", lines[0]), lines
    assert re.fullmatch(r"llmsim: \[\d+\] loaded tiny in \d+\.\d s", lines[-1]), lines


def test_a_download_shows_the_hubs_progress_bars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    """--allow-download turns the Hub's own progress bars on (whatever disabled them) and says where it goes;
    the Hub is played by a function here: the test fetches nothing."""
    import huggingface_hub
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

    from llmsim.backends.mlx import models as mlx_models

    calls: list[dict[str, object]] = []

    def snapshot(repo: str, **options: object) -> str:
        calls.append(options)
        if options.get("local_files_only"):
            raise FileNotFoundError("not cached")
        assert not are_progress_bars_disabled()
        (tmp_path / "config.json").write_text("{}")
        return str(tmp_path)

    disable_progress_bars()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    assert mlx_models.resolve("mlx-community/tiny", allow_download=True) == tmp_path
    assert [c.get("local_files_only", False) for c in calls] == [True, False]
    assert "llmsim: downloading mlx-community/tiny from the Hugging Face Hub" in capfd.readouterr().err


# --- continuous batching -------------------------------------------------------------------------------------

PROMPTS = ["Tell me about the sea", "What is two plus two?", "Name a colour", "Write a haiku about rain",
           "Hello there", "Why is the sky blue?", "List three fruits", "Describe Paris"]


def greedy(mlx: openai.OpenAI, prompt: str) -> str:
    return mlx.responses.create(model="tiny", input=prompt, temperature=0, max_output_tokens=24).output_text


def test_concurrent_requests_decode_the_same_text_as_serial_ones(mlx: openai.OpenAI) -> None:
    serial = [greedy(mlx, p) for p in PROMPTS]
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        concurrent = list(pool.map(lambda p: greedy(mlx, p), PROMPTS))
    assert concurrent == serial
    assert len(set(serial)) > 1  # the prompts really differ


def test_a_short_request_is_answered_while_a_long_one_decodes(mlx: openai.OpenAI) -> None:
    with mlx.responses.stream(model="scripted", input="Go <|s_endless|>") as long:
        seen = 0
        for event in long:
            seen += event.type == "response.output_text.delta"
            if seen == 5:
                # joins the running batch (a model that ran one request at a time would make it wait out the long)
                short = mlx.with_options(timeout=30).responses.create(model="scripted", input="Say hello")
                break
        remaining = 0
        for event in long:  # read no further than the check needs: the rest is ~3000 tokens, ~30 s of decoding
            remaining += event.type == "response.output_text.delta"
            if remaining > 100:
                break
    assert short.output_text == "Hello there."
    assert remaining > 100  # the long one was still far from done when the short one finished


@pytest.mark.parametrize(("path", "body", "token", "end"), [
    ("/v1/responses", {"input": "Go <|s_endless|>", "max_output_tokens": 200}, b"event: response.output_text.delta",
     b"event: response.incomplete"),  # its limit reached
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Go <|s_endless|>"}],
                              "max_completion_tokens": 200}, b'"delta":{"content"', b"data: [DONE]"),
])
def test_tokens_leave_as_they_are_decoded(mlx_server: ServerProcess, path: str, body: dict, token: bytes,
                                          end: bytes) -> None:
    """A stream nothing paces still waits on the model: its first token leaves before its last is decoded (its
    events are not held back to go out in one write, as a simulated answer's are)."""
    with httpx.stream("POST", mlx_server.url + path, json={"model": "scripted", "stream": True, **body},
                      timeout=30) as response:
        reads = list(response.iter_raw())
    everything = b"".join(reads)
    assert everything.count(token) >= 190 and end in everything
    first = next(i for i, read in enumerate(reads) if token in read)
    assert end not in reads[first] and len(reads) > 10  # ~200 writes ~1 ms apart: as many reads as the client made


def test_arguments_stream_token_by_token(mlx: openai.OpenAI) -> None:
    with mlx.responses.stream(model="scripted", input="Weather? <|s_tool|>", tools=[WEATHER]) as stream:
        pieces = [e.delta for e in stream if e.type == "response.function_call_arguments.delta"]
    assert len(pieces) > 3 and json.loads("".join(pieces)) == {"city": "Paris"}


def test_sampling_is_per_request_within_one_batch(mlx: openai.OpenAI) -> None:
    def sample(options: dict[str, object]) -> str:
        return mlx.responses.create(model="tiny", input="Tell me about the sea", max_output_tokens=24,
                                    extra_headers={"X-LLMSim-Seed": "5"}, **options).output_text

    mix = [{"temperature": 0}, {"temperature": 1.5}, {"temperature": 1.5}, {"temperature": 0}]
    with ThreadPoolExecutor(len(mix)) as pool:
        cold, hot, hot_again, cold_again = pool.map(sample, mix)
    assert cold == cold_again == greedy(mlx, "Tell me about the sea")
    assert hot == hot_again  # a seeded request draws from its own key, whatever shares the batch
    assert hot != cold


def test_leaving_mid_batch_frees_the_slot(models: dict[str, Path]) -> None:
    """With one decode slot, a second request waits; the first one closing gives it the slot at once."""
    loaded = load_model(ModelSpec("scripted", str(models["scripted"])), trust_remote_code=True,
                        decode_concurrency=1, prompt_concurrency=1)
    from llmsim.backends.mlx.backend import MLXBackend

    backend = MLXBackend([loaded])
    queue: list[int] = []
    waits: list[float] = []
    backend.observe(type("Observer", (), {"waiting": lambda _, model, change: queue.append(change),
                                          "queued": lambda _, model, seconds: waits.append(seconds)})())

    def prompt(text: str) -> Prompt:
        return Prompt(model="scripted", profile=loaded.profile, turns=[Turn("user", text)], input_tokens=0,
                      temperature=0.0)

    endless = backend.generate(prompt("Go <|s_endless|>"))
    for _ in range(5):
        next(endless)
    waiting = backend.generate(prompt("Say hello"))
    endless.close()
    first = next(waiting)
    assert loaded.scheduler.running == 1  # only the newcomer: the closed one left the batch
    text = first.text + "".join(d.text for d in waiting if hasattr(d, "text"))
    assert text == "Hello there."
    assert loaded.scheduler.running == 0 and loaded.scheduler.waiting == 0
    assert queue == [1, -1] and len(waits) == 1  # the newcomer waited for the slot (vllm:num_requests_waiting)


def test_proxy_in_front_of_mlx_records_what_replay_serves(mlx_server: ServerProcess, tmp_path: Path) -> None:
    """Real local generation as the upstream: the proxy streams the mlx events through unchanged and records
    them; a replay server then serves the same stream, tool call included, with no model loaded."""
    def run(server: ServerProcess) -> tuple[list[dict], str]:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                               default_headers={"Connection": "close"})
        with client.responses.stream(model="scripted", input="Weather? <|s_tool|>", tools=[WEATHER]) as stream:
            events = [event.model_dump() for event in stream]
        chat = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi"}],
                                              temperature=0, max_completion_tokens=8)
        return events, str(chat.choices[0].message.content)

    with ServerProcess("--backend", "proxy", "--upstream", mlx_server.base_url, "--record", str(tmp_path),
                       "--upstream-keyless") as proxy:
        events, chat = run(proxy)
    call = events[-1]["response"]["output"][-1]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert chat
    assert len(list(tmp_path.glob("*.json"))) == 2
    with ServerProcess("--backend", "replay", "--cassettes", str(tmp_path), "--speed", "0") as replay:
        assert run(replay) == (events, chat)
