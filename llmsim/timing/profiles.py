"""Model profiles: what each model is (encoding, limits, reasoning efforts), loaded from YAML.

One file per family under profiles/; each file has `defaults` merged into every
entry of `models`, and may have `families`: how a name no profile lists is placed
(`gpt-6.3-sol` reasons like gpt-5.2, `gpt-4o-foo` does not), so a model released after
the files were written gets its family's parameter rules, and the nearest model's
limits, timing and pricing. Files are validated once at start-up; a bad file stops
the server with a message naming the file and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmsim import yamlload
from llmsim.errors import APIError
from llmsim.timing.latency import Timing
from llmsim.timing.pricing import Pricing

MAX_MODEL_NAME = 256  # characters in a requested model name

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"]


class Limits(BaseModel):
    """Requests and tokens per minute; unset means unlimited. `tpm` counts input and output together (OpenAI's
    way); `itpm` / `otpm` count them apart (Anthropic's way); any may be set beside the others."""

    model_config = ConfigDict(extra="forbid")
    rpm: int | None = Field(None, gt=0)
    tpm: int | None = Field(None, gt=0)
    itpm: int | None = Field(None, gt=0)
    otpm: int | None = Field(None, gt=0)

    def __bool__(self) -> bool:
        return any(value is not None for value in (self.rpm, self.tpm, self.itpm, self.otpm))


class ProfileError(Exception):
    """A profile file that cannot be used; the message names the file and field."""


class ReasoningSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    efforts: list[Effort]
    default: Effort

    @model_validator(mode="after")
    def _default_is_allowed(self) -> ReasoningSpec:
        if self.default not in self.efforts:
            raise ValueError(f"default effort {self.default!r} is not in efforts {self.efforts}")
        return self


class EmbeddingSpec(BaseModel):
    """An embedding model: its vectors' size, the longest text it takes, and whether a client may ask for fewer
    dimensions (`dimensions`, `outputDimensionality`), from `min_dimensions` up."""

    model_config = ConfigDict(extra="forbid")
    dimensions: int = Field(gt=0)
    max_input_tokens: int = Field(8192, gt=0)
    shortens: bool = True
    min_dimensions: int = Field(1, gt=0)


class Profile(BaseModel):
    """One model as the API presents it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    snapshot: str | None = None
    aliases: list[str] = Field(default_factory=list)
    owned_by: str = "openai"
    created: int = 1_700_000_000
    encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"
    context_window: int = Field(128_000, gt=0)
    max_output_tokens: int = Field(16_384, gt=0)
    reasoning: ReasoningSpec | None = None
    sampling_with_reasoning: bool = False  # temperature/top_p allowed only when effort is "none"
    sampling_always: bool = False  # a local model: temperature/top_p allowed with any effort
    timing: Timing | None = None  # unset: responses come as fast as they are made
    pricing: Pricing | None = None  # unset: no cost reported
    rate_limits: Limits | None = None  # rpm/tpm/itpm/otpm per key; unset: the faults file's (llmsim/chaos/ratelimit.py)
    embedding: EmbeddingSpec | None = None  # set: an embedding model (POST /v1/embeddings, embedContent)

    @property
    def echo_name(self) -> str:
        return self.snapshot or self.id


class Family(BaseModel):
    """Names matching `match` (a regular expression, from the name's start) take the profile of `like`, with the
    family's `reasoning` where given (`null`: a model that does not reason). `known`: the names the live API
    serves in this family, which `--strict-models` accepts too."""

    model_config = ConfigDict(extra="forbid")
    match: re.Pattern[str]
    like: str
    reasoning: ReasoningSpec | None = None
    reasons: bool = True  # False: the family does not reason, whatever `like` does
    known: list[str] = Field(default_factory=list)


class ProfileFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: dict[str, Any] = Field(default_factory=dict)
    models: list[dict[str, Any]] = Field(default_factory=list)
    families: list[Family] = Field(default_factory=list)


class Catalog:
    """Name → Profile, aliases included; unknown names get the `default` profile, or an error when strict."""

    def __init__(self, profiles: list[Profile], strict: bool = False, families: list[Family] | None = None) -> None:
        self.profiles = list({p.id: p for p in profiles}.values())  # a later directory's model replaces the earlier
        self.strict = strict
        self.families = families or []
        self._known = {name for family in self.families for name in family.known}
        self._by_name: dict[str, Profile] = {}
        for profile in self.profiles:
            for name in (profile.id, *profile.aliases, *([profile.snapshot] if profile.snapshot else [])):
                self._by_name[name] = profile
        self.default = self._by_name.get("default") or Profile(id="default")

    def get(self, name: str) -> Profile | None:
        return self._by_name.get(name)

    def resolve(self, name: str, missing_status: int = 400) -> Profile:
        """The profile `name` gets: its own, its family's (see Family), else the default one. With
        `--strict-models` a name the live API does not serve gets its `model_not_found` (`missing_status`: 400
        from /responses, 404 from /chat/completions)."""
        if len(name) > MAX_MODEL_NAME:  # the API's bound; unbounded names would also grow per-model state
            raise APIError(f"Invalid 'model': string too long. Expected a string with maximum length "
                           f"{MAX_MODEL_NAME}, but got a string with length {len(name)} instead.", param="model",
                           code="string_above_max_length")
        known = self._by_name.get(name)
        if known is not None:
            return known
        if self.strict and name not in self._known:
            if missing_status == 404:  # Chat Completions' words
                raise APIError(f"The model `{name}` does not exist or you do not have access to it.", status=404,
                               param=None, code="model_not_found")
            raise APIError(f"The requested model '{name}' does not exist.", param="model", code="model_not_found")
        return self.infer(name)

    def infer(self, name: str) -> Profile:
        """A name no profile lists: its family's profile (the first family that matches), else the default's."""
        for family in self.families:
            like = self._by_name.get(family.like)
            if like is None or not family.match.match(name):
                continue
            reasoning = (family.reasoning or like.reasoning) if family.reasons else None
            sampling = like.sampling_with_reasoning and reasoning is not None and "none" in reasoning.efforts
            return like.model_copy(update={"id": name, "snapshot": None, "aliases": [], "reasoning": reasoning,
                                           "sampling_with_reasoning": sampling})
        return self.default.model_copy(update={"id": name, "snapshot": None, "aliases": []})

    def listed(self) -> list[Profile]:
        return [p for p in self.profiles if p.id != "default"]


def load_file(path: Path) -> list[Profile]:
    return _load(path).profiles


def _load(path: Path) -> Loaded:
    try:
        raw = yamlload.safe_load(path.read_text())
        spec = ProfileFile.model_validate(raw)
        return Loaded([_profile(path, spec.defaults, entry, i) for i, entry in enumerate(spec.models)],
                      spec.families)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise ProfileError(f"{path}: {_problems(exc)}") from exc


def _profile(path: Path, defaults: dict[str, Any], entry: dict[str, Any], index: int) -> Profile:
    try:
        return Profile.model_validate({**defaults, **entry})
    except ValidationError as exc:  # name the entry, so the field is findable in a file of many models
        name = f" ({entry['id']})" if isinstance(entry.get("id"), str) else ""
        raise ProfileError(f"{path}: models[{index}]{name}: {_problems(exc)}") from exc


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(file)'}: {err['msg']}" for err in exc.errors())


class Loaded(NamedTuple):
    profiles: list[Profile]
    families: list[Family]


def load_catalog(dirs: list[Path], strict: bool = False) -> Catalog:
    """Every file of every directory; a later directory's families are tried first (they refine the earlier)."""
    profiles: list[Profile] = []
    families: list[Family] = []
    for directory in dirs:
        if not directory.is_dir():
            raise ProfileError(f"{directory}: profiles directory does not exist")
        found: list[Family] = []
        for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
            loaded = _load(path)
            profiles.extend(loaded.profiles)
            found.extend(loaded.families)
        families = found + families
    return Catalog(profiles, strict, families)


