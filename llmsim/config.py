"""Server settings: one dataclass, filled from CLI flags or LLMSIM_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

# In the package (a link to the top-level profiles/ in a checkout), so a wheel carries them.
DEFAULT_PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
# Pacing speeds other than 0 (no waiting): slower than 100x stretches a reply past any client's patience.
MIN_SPEED, MAX_SPEED = 0.01, 10_000.0
TEXT_MODES = ("prose", "echo", "lorem", "faker")  # the sim's text sources (llmsim/backends/sim/text.py)
CUT_GRACE = 3.0  # seconds work cut at the end of --graceful-timeout gets to write and store its terminal event
# replay: how a request finds its cassette (llmsim/backends/replay/library.py), and what a miss does
# (llmsim/backends/replay/backend.py); here, so that `llmsim serve` checks its flags without importing the backends
Mode = Literal["normalised", "exact", "sequence"]
MATCH_MODES: tuple[Mode, ...] = ("normalised", "exact", "sequence")
OnMiss = Literal["error", "sim", "proxy"]
ON_MISS: tuple[OnMiss, ...] = ("error", "sim", "proxy")
SPEED_EXPECTED = f"0 or a number from {MIN_SPEED:g} to {MAX_SPEED:g}"


def valid_speed(speed: float) -> bool:
    return speed == 0 or MIN_SPEED <= speed <= MAX_SPEED


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
    strict_params: bool = False  # unknown parameters, fields and enum values: the live API's 400, not a warning
    store: str = "memory"  # or sqlite:///path.db
    store_max_entries: int = 1024
    store_ttl_seconds: float = 3600.0
    store_min_free_mb: float = 64.0  # SQLite: /llmsim/health reports the disk's free space below this
    api_key: str | None = None  # comma-separated for several keys, each its own scope for stored objects
    admin_key: str | None = None
    allowed_hosts: list[str] = field(default_factory=list)  # Host names beyond loopback's (llmsim/api/guard.py)
    cors_origins: list[str] = field(default_factory=lambda: ["loopback"])  # browser origins that may call it
    faults_file: Path | None = None  # YAML/JSON fault rules and rate limits (llmsim/chaos/faults.py)
    fault_rules: list[str] = field(default_factory=list)  # `KIND;key=value;...` specs, after the file's rules
    rpm: int | None = None  # default requests-per-minute limit per API key and model
    tpm: int | None = None  # default tokens-per-minute limit per API key and model
    itpm: int | None = None  # default input-tokens-per-minute limit per API key and model (Anthropic's ITPM)
    otpm: int | None = None  # default output-tokens-per-minute limit per API key and model (Anthropic's OTPM)
    scenario_file: Path | None = None  # YAML/JSON scripted scenario (llmsim/chaos/scenarios.py)
    tool_call_rate: float = 0.0  # sim: chance of an unprompted tool call under tool_choice auto
    text_mode: str = "prose"  # sim: prose | echo | lorem | faker (llmsim/backends/sim/text.py)
    max_body_bytes: int = 32 * 1024 * 1024
    workers: int = 1
    max_num_seqs: int = 256  # paced requests run at once per worker; more wait (llmsim/timing/sequences.py)
    max_queue: int = 1024  # paced requests waiting per worker; more are refused with the surface's overload error
    worker_connections: int = 4096  # per worker; past it the idle longest is closed (llmsim/runtime/worker.py)
    read_timeout: float = 30.0  # seconds for a request's head (idle keep-alive included), and its body, to arrive
    ws_idle_timeout: float = 300.0  # seconds a WebSocket may go without a client message, or a frame unread
    graceful_timeout: float = 30.0  # seconds in-flight requests get to finish after SIGTERM (llmsim/runtime/worker.py)
    upstream: str | None = None  # proxy: the upstream's base URL, e.g. https://api.openai.com/v1
    upstream_api_key_env: str = "OPENAI_API_KEY"  # proxy: the variable holding the upstream key (never stored)
    upstream_keyless: bool = False  # proxy: forward with no key; else an unset key variable stops start-up
    record_dir: Path | None = None  # proxy: write a cassette per interaction here
    cassettes_dir: Path | None = None  # replay: the cassettes to answer from
    match: str = "normalised"  # replay: normalised | exact | sequence
    on_miss: str = "error"  # replay: error | sim | proxy

    @property
    def api_keys(self) -> tuple[str, ...]:
        """The accepted bearer keys (`--api-key a,b`); empty when no key is required."""
        return tuple(key.strip() for key in (self.api_key or "").split(",") if key.strip())
