"""The Gemini API and embeddings on a loaded model (--backend mlx; the tiny random qwen2 built here, no download):
generateContent and its stream from the model, and embeddings from its pooled hidden states behind the same routes
(OpenAI's /v1/embeddings, Gemini's embedContent), sized as its hidden states, the same text the same vector."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from llmsim.testing import ServerProcess

# Looked up, not imported: every xdist process collects this module, and importing mlx_lm costs a core ~3 s.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mlx_lm") is None, reason="needs the [mlx] extra")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from llmsim.backends.mlx.fixture import build_random_model

    return build_random_model(tmp_path_factory.mktemp("mlx-embeddings") / "tiny")


@pytest.fixture(scope="module")
def server(model: Path) -> Iterator[ServerProcess]:
    with ServerProcess("--speed", "0", "--backend", "mlx", "--model", f"tiny={model}",
                       startup_timeout=120) as process:
        yield process


def test_openai_embeddings_from_the_model(server: ServerProcess, model: Path) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    made = client.embeddings.create(model="tiny", input=["hello world", "hello world", "something else"])
    vectors = np.array([item.embedding for item in made.data])
    hidden = json.loads((model / "config.json").read_text())["hidden_size"]
    assert vectors.shape == (3, hidden)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert np.allclose(vectors[0], vectors[1]) and not np.allclose(vectors[0], vectors[2])
    assert made.usage.prompt_tokens > 3
    short = client.embeddings.create(model="tiny", input="hello", dimensions=4, encoding_format="float")
    assert len(short.data[0].embedding) == 4


def test_gemini_embed_content_from_the_model(server: ServerProcess) -> None:
    url = f"{server.url}/v1beta/models/tiny:embedContent"
    one = httpx.post(url, json={"content": {"parts": [{"text": "hello world"}]}}).json()
    openai_side = httpx.post(f"{server.base_url}/embeddings", json={"model": "tiny", "input": "hello world",
                                                                       "encoding_format": "float"}).json()
    assert np.allclose(one["embedding"]["values"], openai_side["data"][0]["embedding"], atol=1e-5)


def test_generate_content_from_the_model(server: ServerProcess) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "Hello there"}]}],
            "generationConfig": {"maxOutputTokens": 6, "temperature": 0}}
    made = httpx.post(f"{server.url}/v1beta/models/tiny:generateContent", json=body).json()
    usage = made["usageMetadata"]
    assert made["candidates"][0]["finishReason"] in ("MAX_TOKENS", "STOP") and made["modelVersion"] == "tiny"
    assert usage["promptTokenCount"] > 2 and 0 < usage["candidatesTokenCount"] <= 6
    streamed = httpx.post(f"{server.url}/v1beta/models/tiny:streamGenerateContent", params={"alt": "sse"},
                          json=body).text
    chunks = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: ")]
    text = "".join(part.get("text", "") for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"])
    assert text == made["candidates"][0]["content"]["parts"][0]["text"]  # greedy: the same words either way
