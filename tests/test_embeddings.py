"""POST /v1/embeddings with the openai SDK against a real server: floats, base64 (the SDK's default), `dimensions`,
token arrays, exact usage, the live API's errors; vectors that mean something (a question is nearest the document
that answers it) and repeat under a seed; rate limits, faults and metrics as on every endpoint. The vectors
themselves are checked in-process."""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import numpy as np
import openai
import pytest

from llmsim import tokens
from llmsim.backends.sim import embeddings
from llmsim.testing import ServerProcess

DOCUMENTS = ["Paris is the capital of France, a country in Western Europe.",
             "The mitochondria is the powerhouse of the cell.",
             "Python is a programming language created by Guido van Rossum.",
             "Photosynthesis lets plants turn sunlight into chemical energy."]
QUESTIONS = {"What is the capital of France?": 0, "Which part of the cell makes its energy?": 1,
             "Who created the Python programming language?": 2, "How do plants use sunlight?": 3}
LIMITED = ("--rpm", "2")


def test_vectors_are_unit_deterministic_and_meaningful() -> None:
    first = embeddings.embed("Paris is the capital of France", "m", 1536, seed=1)
    assert first.shape == (1536,) and abs(float(np.linalg.norm(first)) - 1) < 1e-5
    assert np.array_equal(first, embeddings.embed("Paris is the capital of France", "m", 1536, seed=1))
    assert not np.allclose(first, embeddings.embed("Paris is the capital of France", "m", 1536, seed=2))
    assert not np.allclose(first, embeddings.embed("Paris is the capital of France", "other", 1536, seed=1))
    near = embeddings.embed("the capital of France", "m", 1536, seed=1)
    far = embeddings.embed("mitochondria and cells", "m", 1536, seed=1)
    assert float(first @ near) > 0.4 > 0.1 > float(first @ far)
    assert np.count_nonzero(np.abs(first) > 1e-4) > 1400  # dense, as a model's are


def test_openai_sdk_floats_base64_and_dimensions(client: openai.OpenAI) -> None:
    floats = client.embeddings.create(model="text-embedding-3-small", input=DOCUMENTS, encoding_format="float")
    assert [item.index for item in floats.data] == [0, 1, 2, 3]
    assert all(len(item.embedding) == 1536 for item in floats.data)
    counted = sum(len(tokens.encoding("cl100k_base").encode(text)) for text in DOCUMENTS)
    assert floats.usage.prompt_tokens == floats.usage.total_tokens == counted
    assert floats.model == "text-embedding-3-small"
    decoded = client.embeddings.create(model="text-embedding-3-small", input=DOCUMENTS)  # the SDK asks for base64
    assert np.allclose([item.embedding for item in decoded.data], [item.embedding for item in floats.data],
                       atol=1e-6)
    short = client.embeddings.create(model="text-embedding-3-large", input="hello", dimensions=256)
    assert len(short.data[0].embedding) == 256 and abs(np.linalg.norm(short.data[0].embedding) - 1) < 1e-5
    large = client.embeddings.create(model="text-embedding-3-large", input="hello")
    assert len(large.data[0].embedding) == 3072
    assert len(client.embeddings.create(model="text-embedding-ada-002", input="hi").data[0].embedding) == 1536


def test_raw_base64_is_little_endian_float32(server: ServerProcess) -> None:
    body = {"model": "text-embedding-3-small", "input": "hello"}
    raw = httpx.post(f"{server.base_url}/embeddings", json={**body, "encoding_format": "base64"}).json()
    floats = httpx.post(f"{server.base_url}/embeddings", json=body).json()
    decoded = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(decoded, floats["data"][0]["embedding"], atol=1e-7)


def test_token_arrays_count_as_sent(client: openai.OpenAI) -> None:
    made = client.embeddings.create(model="text-embedding-3-small", input=[[9906, 1917], [15339, 1917, 0]])
    assert len(made.data) == 2 and made.usage.prompt_tokens == 5
    one = client.embeddings.create(model="text-embedding-3-small", input=[9906, 1917])
    assert len(one.data) == 1 and one.usage.prompt_tokens == 2


def test_the_question_finds_its_document(client: openai.OpenAI) -> None:
    documents = np.array([item.embedding for item in client.embeddings.create(
        model="text-embedding-3-small", input=DOCUMENTS).data])
    for question, answer in QUESTIONS.items():
        vector = np.array(client.embeddings.create(model="text-embedding-3-small", input=question).data[0].embedding)
        assert int(np.argmax(documents @ vector)) == answer, question


def test_a_seed_repeats_the_vectors(server: ServerProcess) -> None:
    def vector(seed: str) -> list[float]:
        return httpx.post(f"{server.base_url}/embeddings", json={"model": "text-embedding-3-small", "input": "hi"},
                          headers={"X-LLMSim-Seed": seed}).json()["data"][0]["embedding"]

    assert vector("7") == vector("7") != vector("8")


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"model": "text-embedding-3-small", "input": ""}, 400, "'$.input' is invalid"),
    ({"model": "text-embedding-3-small", "input": []}, 400, "'$.input' is invalid"),
    ({"model": "text-embedding-3-small", "input": [[]]}, 400, "'$.input' is invalid"),
    ({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}, 400, "does not support specifying"),
    ({"model": "text-embedding-3-small", "input": "x", "dimensions": 4096}, 400, "less than or equal to 1536"),
    ({"model": "text-embedding-3-small", "input": "x", "dimensions": 0}, 400, "dimensions"),
    ({"model": "text-embedding-3-small", "input": "word " * 9000}, 400, "maximum context length is 8192 tokens"),
    ({"model": "text-embedding-3-small", "input": [10**9]}, 400, "'$.input' is invalid"),
    ({"model": "text-embedding-3-small"}, 400, "Missing required parameter: 'input'"),
    ({"model": "text-embedding-3-small", "input": 5}, 400, "Invalid type for 'input': expected a string or an array, "
                                                           "but got a number instead."),
    ({"model": "text-embedding-3-small", "input": None}, 400, "but got null instead"),
])
def test_errors_as_the_live_api_gives_them(server: ServerProcess, body: dict[str, object], status: int,
                                           words: str) -> None:
    answer = httpx.post(f"{server.base_url}/embeddings", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert words in error["message"] and error["type"] == "invalid_request_error"


def test_unknown_parameters_are_reported_or_refused(server: ServerProcess) -> None:
    body = {"model": "text-embedding-3-small", "input": "x", "dimensionz": 3}
    lenient = httpx.post(f"{server.base_url}/embeddings", json=body)
    assert lenient.status_code == 200 and "dimensionz" in lenient.headers["x-llmsim-warnings"]
    strict = httpx.post(f"{server.base_url}/embeddings", json=body, headers={"X-LLMSim-Strict-Params": "true"})
    assert strict.status_code == 400 and strict.json()["error"]["code"] == "unknown_parameter"


def test_rate_limits_faults_cost_and_metrics(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*LIMITED)
    url = f"{server.base_url}/embeddings"
    body = {"model": "text-embedding-3-small", "input": "hello world"}
    answers = [httpx.post(url, json=body, headers={"Authorization": "Bearer sk-embed"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["x-ratelimit-limit-requests"] == "2" and "retry-after" in answers[2].headers
    assert float(answers[0].headers["x-llmsim-cost-usd"]) == pytest.approx(2 * 0.02 / 1e6)
    faulted = httpx.post(url, json=body, headers={"X-LLMSim-Fault": "server_error"})
    assert faulted.status_code == 500 and faulted.json()["error"]["type"] == "server_error"
    scraped = httpx.get(f"{server.url}/metrics").text
    assert any(line.startswith("llmsim_requests_total{") and 'endpoint="/embeddings"' in line
               for line in scraped.splitlines())
    assert 'model_name="text-embedding-3-small"' in scraped
    log = httpx.get(f"{server.url}/llmsim/admin/requests").json()
    assert any(entry.get("endpoint") == "embeddings" for entry in log.get("requests", log.get("data", [])))
