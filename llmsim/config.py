"""Server settings: one dataclass, filled from CLI flags or LLMSIM_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PROFILES_DIR = Path(__file__).resolve().parent.parent / "profiles"


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    backend: str = "sim"
    models: list[str] = field(default_factory=list)  # mlx: [ALIAS=]PATH_OR_HF_ID
    allow_download: bool = False  # mlx: fetch --model ids missing from the local Hugging Face cache
    trust_remote_code: bool = False  # mlx: run a model's own architecture file
    decode_concurrency: int = 32  # mlx: sequences decoded at once per model; more wait
    prompt_concurrency: int = 8  # mlx: prompts prefilled at once per model
    profiles_dir: list[Path] = field(default_factory=lambda: [DEFAULT_PROFILES_DIR])
    seed: int | None = None
    speed: float = 1.0
    strict_models: bool = False
    store: str = "memory"  # or sqlite:///path.db
    store_max_entries: int = 1024
    store_ttl_seconds: float = 3600.0
    api_key: str | None = None
    admin_key: str | None = None
    faults_file: Path | None = None  # YAML/JSON fault rules and rate limits (llmsim/faults.py)
    fault_rules: list[str] = field(default_factory=list)  # `KIND;key=value;...` specs, after the file's rules
    rpm: int | None = None  # default requests-per-minute limit per API key and model
    tpm: int | None = None  # default tokens-per-minute limit per API key and model
    scenario_file: Path | None = None  # YAML/JSON scripted scenario (llmsim/scenarios.py)
    tool_call_rate: float = 0.0  # sim: chance of an unprompted tool call under tool_choice auto
    text_mode: str = "prose"  # sim: prose | echo | lorem | faker (llmsim/backends/sim/text.py)
    max_body_bytes: int = 32 * 1024 * 1024
    workers: int = 1
    worker_connections: int = 4096
