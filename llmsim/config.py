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
    profiles_dir: list[Path] = field(default_factory=lambda: [DEFAULT_PROFILES_DIR])
    seed: int | None = None
    speed: float = 1.0
    store_max_entries: int = 1024
    store_ttl_seconds: float = 3600.0
    api_key: str | None = None
    admin_key: str | None = None
    faults_file: Path | None = None  # YAML/JSON fault rules and rate limits (llmsim/faults.py)
    fault_rules: list[str] = field(default_factory=list)  # `KIND;key=value;...` specs, after the file's rules
    rpm: int | None = None  # default requests-per-minute limit per API key and model
    tpm: int | None = None  # default tokens-per-minute limit per API key and model
    max_body_bytes: int = 32 * 1024 * 1024
    workers: int = 1
    worker_connections: int = 4096
