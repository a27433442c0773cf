"""GET /models lists what the profiles define; tokens are counted with each model's real encoding."""

from __future__ import annotations

import re
import subprocess
import sys
import typing
from pathlib import Path

import openai
import pytest
from openai.types import shared

from llmsim import tokens
from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.errors import APIError
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


# --- model names by family (profiles/families.yaml; issue 32, finding 2) ---------------------------------

# Codex CLI 0.171.0's catalog (`codex debug models`), its default first.
CODEX_MODELS = ["gpt-6.2-sol", "gpt-6.2-astra", "gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-sol",
                "gpt-6-luna", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-daybreak-blue-latest",
                "gpt-daybreak-red-latest", "gpt-5.5", "codex-auto-review"]
REASONING_NAMES = re.compile(r"^(gpt-5|gpt-6|gpt-7|gpt-daybreak|o\d)|codex|-pro\b|deep-research|-research$")


def sdk_model_ids() -> list[str]:
    """Every model id in the installed openai SDK's literals (ChatModel, ResponsesModel, AllModels)."""
    found: set[str] = set()

    def literals(tp: object) -> None:
        if typing.get_origin(tp) is typing.Literal:
            found.update(a for a in typing.get_args(tp) if isinstance(a, str))
        for arg in typing.get_args(tp):
            literals(arg)

    for alias in (shared.ChatModel, shared.ResponsesModel, shared.AllModels):
        literals(alias)
    return sorted(found)


def test_every_sdk_and_codex_model_id_is_known_to_strict_models() -> None:
    catalog = load_catalog([DEFAULT_PROFILES_DIR], strict=True)
    names = sdk_model_ids() + CODEX_MODELS
    assert len(names) > 100
    placed = {name: catalog.resolve(name) for name in names}  # none is model_not_found
    wrong = [name for name, profile in placed.items()
             if (profile.reasoning is not None) != bool(REASONING_NAMES.search(name)) or profile.pricing is None]
    assert wrong == []
    assert placed["gpt-5.4-mini"].pricing == catalog.resolve("gpt-5-mini").pricing  # the nearest model's prices
    with pytest.raises(APIError) as error:
        catalog.resolve("gpt-5.9-imaginary")
    assert error.value.code == "model_not_found"
    assert load_catalog([DEFAULT_PROFILES_DIR]).resolve("gpt-7-future").reasoning is not None  # inferred by name


def test_every_sdk_model_id_accepts_its_familys_reasoning_parameters(client: openai.OpenAI) -> None:
    refused = []
    for model in sdk_model_ids() + CODEX_MODELS:
        reasons = bool(REASONING_NAMES.search(model))
        try:
            if reasons:  # every reasoning family accepts `medium`, and the default sampling values
                client.responses.create(model=model, input="hi", max_output_tokens=16, reasoning={"effort": "medium"},
                                        temperature=1, top_p=1)
            else:
                client.responses.create(model=model, input="hi", max_output_tokens=16, temperature=0.5)
        except openai.BadRequestError as error:
            refused.append(f"{model}: {error.message}")
        if not reasons:
            with pytest.raises(openai.BadRequestError):
                client.responses.create(model=model, input="hi", reasoning={"effort": "low"})
    assert refused == []
    for model in CODEX_MODELS[:1]:  # Codex's own efforts on its default model
        for effort in ("low", "xhigh", "max", "ultra"):
            assert client.responses.create(model=model, input="hi", max_output_tokens=16,
                                           reasoning={"effort": effort}).status in ("completed", "incomplete")
