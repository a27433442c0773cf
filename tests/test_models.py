"""GET /models lists what the profiles define; tokens are counted with each model's real encoding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openai
import pytest

from llmsim import tokens
from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.timing.profiles import ProfileError, load_catalog

REQUIRED = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini",
            "gpt-5-nano", "gpt-5.1", "gpt-5.2", "o1", "o3", "o3-mini", "o4-mini"]


def test_list_and_retrieve_models(client: openai.OpenAI) -> None:
    listed = {model.id: model for model in client.models.list()}
    assert set(REQUIRED) <= listed.keys() and "default" not in listed
    assert all(m.object == "model" and m.owned_by for m in listed.values())
    assert client.models.retrieve("o3").id == "o3"
    assert client.models.retrieve("gpt-4o-2024-08-06").id == "gpt-4o-2024-08-06"  # a snapshot name
    with pytest.raises(openai.NotFoundError) as error:
        client.models.retrieve("gpt-9000")
    assert error.value.body["code"] == "model_not_found"


def test_unknown_model_uses_the_default_profile(client: openai.OpenAI) -> None:
    response = client.responses.create(model="my-finetune", input="hi")
    assert response.model == "my-finetune" and response.status == "completed"


def test_real_encodings_offline() -> None:
    assert tokens.encoding("o200k_base").encode("Hello world") == [13225, 2375]
    assert tokens.encoding("cl100k_base").encode("Hello world") == [9906, 1917]


def test_usage_uses_the_model_encoding(client: openai.OpenAI) -> None:
    text = "Tokenizers disagree about words like antidisestablishmentarianism and 🤖 emoji."
    new = client.responses.input_tokens.count(model="gpt-4o", input=text).input_tokens
    old = client.responses.input_tokens.count(model="gpt-4", input=text).input_tokens
    assert new - old == tokens.count(text, "o200k_base") - tokens.count(text, "cl100k_base") != 0


def test_bad_profile_stops_startup_naming_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("models:\n  - id: x\n    context_window: -5\n")
    with pytest.raises(ProfileError, match=r"broken\.yaml.*context_window"):
        load_catalog([DEFAULT_PROFILES_DIR, tmp_path])
    result = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--profiles-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "broken.yaml" in result.stderr and "context_window" in result.stderr
