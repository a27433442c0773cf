"""`--model [ALIAS=]PATH_OR_ID` → a local model directory, offline unless downloads are allowed.

Kept free of MLX imports so the CLI can check every model before forking workers.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

# The files mlx_lm itself fetches for a model.
ALLOW_PATTERNS = ["*.json", "model*.safetensors", "*.py", "tokenizer.model", "*.tiktoken", "tiktoken.model",
                  "*.txt", "*.jsonl", "*.jinja"]


class ModelUnavailable(Exception):
    """A --model that names nothing usable here; the message says what to do."""


@dataclass(frozen=True)
class ModelSpec:
    alias: str
    source: str  # a directory or a Hugging Face repo id


def parse_specs(values: list[str]) -> list[ModelSpec]:
    """`alias=source` or `source` (then the alias is the repo id, or the directory's name)."""
    specs: list[ModelSpec] = []
    for value in values:
        alias, sep, source = value.partition("=")
        if not sep:
            source = alias
            alias = Path(source).name if Path(source).expanduser().exists() else source
        if not alias or not source:
            raise ModelUnavailable(f"--model {value!r}: expected [ALIAS=]PATH_OR_HF_ID")
        if any(s.alias == alias for s in specs):
            raise ModelUnavailable(f"--model {value!r}: the alias {alias!r} is given twice")
        specs.append(ModelSpec(alias, source))
    return specs


def resolve(source: str, allow_download: bool = False) -> Path:
    """The model's directory: a local path, else the local Hugging Face cache; download only if allowed."""
    path = Path(source).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"{source}: no config.json in this directory")
        return path
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    try:
        return Path(snapshot_download(source, allow_patterns=ALLOW_PATTERNS, local_files_only=not allow_download))
    except HFValidationError as exc:
        raise ModelUnavailable(f"{source}: not a directory and not a Hugging Face repo id ({exc})") from exc
    except Exception as exc:  # not in the cache (offline), or the download failed
        hint = "" if allow_download else "; pass --allow-download to fetch it from the Hugging Face Hub"
        raise ModelUnavailable(f"{source}: not found locally nor in the Hugging Face cache{hint} ({exc})") from exc


def check(models: list[str], allow_download: bool = False) -> str | None:
    """Why the mlx backend cannot serve these models (said before workers fork), or None."""
    if importlib.util.find_spec("mlx_lm") is None:
        return "--backend mlx needs the mlx extra: pip install 'llmsim[mlx]'"
    if not models:
        return "--backend mlx needs at least one --model [ALIAS=]PATH_OR_ID"
    try:
        for spec in parse_specs(models):
            resolve(spec.source, allow_download)
    except ModelUnavailable as exc:
        return str(exc)
    return None
