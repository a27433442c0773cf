"""`--model [ALIAS=]PATH_OR_ID` → a local model directory, offline unless downloads are allowed.

Kept free of MLX imports so the CLI can check every model before forking workers.
"""

from __future__ import annotations

import importlib.util
import sys
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
    """The model's directory: a local path, else the local Hugging Face cache; download only if allowed, with the
    Hub's own progress bars on stderr."""
    path = Path(source).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"{source}: no config.json in this directory")
        return path
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import enable_progress_bars

    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        return Path(snapshot_download(source, allow_patterns=ALLOW_PATTERNS, local_files_only=True))
    except HFValidationError as exc:
        raise ModelUnavailable(f"{source}: not a directory and not a Hugging Face repo id ({exc})") from exc
    except Exception as exc:  # not in the cache
        if not allow_download or offline:
            raise ModelUnavailable(missing(source, constants.HF_HUB_CACHE, offline, allow_download)) from exc
    enable_progress_bars()  # the Hub's bars, per file (HF_HUB_DISABLE_PROGRESS_BARS=1 still turns them off)
    print(f"llmsim: downloading {source} from the Hugging Face Hub into {constants.HF_HUB_CACHE}", file=sys.stderr,
          flush=True)
    try:
        return Path(snapshot_download(source, allow_patterns=ALLOW_PATTERNS))
    except Exception as exc:  # no network, no such repo, a gated one
        raise ModelUnavailable(f"{source}: the download failed ({first_line(exc)}); "
                               + missing(source, constants.HF_HUB_CACHE, True, True, said=True)) from exc


def missing(source: str, cache: str, offline: bool, allow_download: bool, said: bool = False) -> str:
    """One line on how to get a model that is not here."""
    away = " and this machine is offline" if offline else ""
    where = "" if said else f"{source}: not in the Hugging Face cache ({cache}){away}; "
    fetch = f"`hf download {source}`" + (" on a connected machine, then copy its cache here (or point HF_HOME at it)"
                                          if offline else "")
    options = [fetch] if offline or allow_download else [fetch, "pass --allow-download to fetch it"]
    return f"{where}get it with {', or '.join(options)}, or give a model directory: --model NAME=PATH"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


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
