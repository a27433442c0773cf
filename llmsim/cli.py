"""`llmsim serve`: every flag also reads an LLMSIM_* environment variable."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sqlite3
import sys
from pathlib import Path

from llmsim.backends import BACKENDS
from llmsim.backends.cassette import load as load_cassettes
from llmsim.backends.mlx.models import check as check_models
from llmsim.backends.replay.backend import ON_MISS
from llmsim.backends.replay.library import MODES as MATCH_MODES
from llmsim.chaos import scenarios
from llmsim.chaos.faults import FaultConfigError, fault_config
from llmsim.config import DEFAULT_PROFILES_DIR, SPEED_EXPECTED, TEXT_MODES, Settings, valid_speed
from llmsim.store import prepare_store
from llmsim.timing.profiles import ProfileError, load_catalog


def _env(name: str, default: object) -> object:
    return os.environ.get(f"LLMSIM_{name.upper()}", default)


def _speed(value: str) -> float:
    speed = float(value)
    if not valid_speed(speed):
        raise argparse.ArgumentTypeError(f"speed must be {SPEED_EXPECTED}, got {value}")
    return speed


def _seconds(value: str) -> float:
    seconds = float(value)
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 3600, got {value}")
    return seconds


def _flag(value: object) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


def _paths(value: str) -> list[Path]:
    return [Path(p) for p in value.split(os.pathsep) if p]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llmsim", description="OpenAI-compatible Responses API server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the server", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    d = Settings()
    serve.add_argument("--host", default=_env("host", d.host), help="address to bind (LLMSIM_HOST)")
    serve.add_argument("--port", type=int, default=_env("port", d.port), help="port (LLMSIM_PORT)")
    serve.add_argument("--backend", choices=BACKENDS, default=_env("backend", d.backend),
                       help="generation backend (LLMSIM_BACKEND)")
    serve.add_argument("--model", action="append", default=None, metavar="[ALIAS=]PATH_OR_ID",
                       help="mlx: a model to load, from a directory or the local Hugging Face cache; repeat for "
                            "several (LLMSIM_MODEL, comma-separated)")
    serve.add_argument("--allow-download", action="store_true", default=_flag(_env("allow_download", False)),
                       help="mlx: download a --model id missing from the local cache (LLMSIM_ALLOW_DOWNLOAD)")
    serve.add_argument("--trust-remote-code", action="store_true",
                       default=_flag(_env("trust_remote_code", False)),
                       help="mlx: allow a model's own architecture file (LLMSIM_TRUST_REMOTE_CODE)")
    serve.add_argument("--decode-concurrency", type=int, default=_env("decode_concurrency", d.decode_concurrency),
                       help="mlx: sequences decoded together per model; more wait for a slot "
                            "(LLMSIM_DECODE_CONCURRENCY)")
    serve.add_argument("--prompt-concurrency", type=int, default=_env("prompt_concurrency", d.prompt_concurrency),
                       help="mlx: prompts prefilled together per model (LLMSIM_PROMPT_CONCURRENCY)")
    serve.add_argument("--profiles-dir", type=_paths, action="extend", default=None,
                       help=f"extra profile directories, added to {DEFAULT_PROFILES_DIR} (LLMSIM_PROFILES_DIR, "
                            f"'{os.pathsep}'-separated)")
    serve.add_argument("--seed", type=int, default=_env("seed", None),
                       help="make every response deterministic (LLMSIM_SEED); per request: X-LLMSim-Seed header")
    serve.add_argument("--speed", type=_speed, default=_env("speed", d.speed),
                       help="pacing multiplier: 0 = no waiting, 1 = realistic, 10 = ten times faster (LLMSIM_SPEED);"
                            " per request: X-LLMSim-Speed header")
    serve.add_argument("--strict-models", action="store_true", default=_flag(_env("strict_models", False)),
                       help="unknown model names get the real API's model_not_found error instead of the default "
                            "profile (LLMSIM_STRICT_MODELS)")
    serve.add_argument("--strict-params", action="store_true", default=_flag(_env("strict_params", False)),
                       help="unknown parameters, fields and enum values get the real API's 400 instead of being "
                            "dropped and reported in x-llmsim-warnings (LLMSIM_STRICT_PARAMS); per request: "
                            "X-LLMSim-Strict-Params header")
    serve.add_argument("--store", default=_env("store", d.store),
                       help="where responses and conversations live: memory, or sqlite:///path.db (relative) / "
                            "sqlite:////abs/path.db, which survives restarts and is shared by workers, or "
                            "redis://[:password@]host:port/db (rediss:// for TLS), where a fleet of servers shares "
                            "all state, chaos included (LLMSIM_STORE)")
    serve.add_argument("--store-max-entries", type=int, default=_env("store_max_entries", d.store_max_entries),
                       help="responses kept in the store, the oldest finished evicted first, unfinished never; "
                            "0 stores nothing (LLMSIM_STORE_MAX_ENTRIES)")
    serve.add_argument("--store-ttl", type=float, default=_env("store_ttl", d.store_ttl_seconds),
                       help="seconds a stored response lives; 0 = forever (LLMSIM_STORE_TTL)")
    serve.add_argument("--api-key", default=_env("api_key", None),
                       help="require this bearer key (LLMSIM_API_KEY); several comma-separated, each seeing only the "
                            "responses and conversations it made; unset = no auth, one shared scope")
    serve.add_argument("--admin-key", default=_env("admin_key", None),
                       help="require this bearer key on /llmsim/admin (LLMSIM_ADMIN_KEY); unset = an --api-key "
                            "guards it, or with neither it is open")
    serve.add_argument("--faults", type=Path, default=_env("faults", None),
                       help="YAML/JSON file of fault rules and rate limits (LLMSIM_FAULTS)")
    serve.add_argument("--fault", action="append", default=None,
                       help="a fault rule, KIND;key=value;... e.g. '500;first=2', repeatable (LLMSIM_FAULT, "
                            "space-separated); per request: X-LLMSim-Fault header")
    serve.add_argument("--rpm", type=int, default=_env("rpm", None),
                       help="requests per minute per API key and model; unset = unlimited (LLMSIM_RPM)")
    serve.add_argument("--tpm", type=int, default=_env("tpm", None),
                       help="tokens per minute per API key and model; unset = unlimited (LLMSIM_TPM)")
    serve.add_argument("--scenario", type=Path, default=_env("scenario", None),
                       help="YAML/JSON scripted scenario to play (LLMSIM_SCENARIO); admin API: /llmsim/admin/scenarios")
    serve.add_argument("--tool-call-rate", type=float, default=_env("tool_call_rate", d.tool_call_rate),
                       help="sim: chance (0-1) of calling a tool the input did not ask for, under tool_choice auto "
                            "(LLMSIM_TOOL_CALL_RATE)")
    serve.add_argument("--text-mode", choices=TEXT_MODES, default=_env("text_mode", d.text_mode),
                       help="sim: prose shaped by the question, echo of the last user message, lorem filler or "
                            "faker sentences (LLMSIM_TEXT_MODE); per request: X-LLMSim-Text-Mode header")
    serve.add_argument("--max-body-bytes", type=int, default=_env("max_body_bytes", d.max_body_bytes),
                       help="largest request body accepted (LLMSIM_MAX_BODY_BYTES)")
    serve.add_argument("--workers", type=int, default=_env("workers", d.workers),
                       help="worker processes; the memory store is per process (LLMSIM_WORKERS)")
    serve.add_argument("--worker-connections", type=int, default=_env("worker_connections", d.worker_connections),
                       help="open connections per worker; past it the one idle longest is closed, and a new one "
                            "gets a 503 when all are busy (LLMSIM_WORKER_CONNECTIONS)")
    serve.add_argument("--read-timeout", type=_seconds, default=_env("read_timeout", d.read_timeout),
                       help="seconds a request's head (idle keep-alive time included) and its body may take to "
                            "arrive; a slower one is closed, or gets a 408 (LLMSIM_READ_TIMEOUT)")
    serve.add_argument("--upstream", default=_env("upstream", None),
                       help="proxy: the OpenAI-compatible base URL to forward to, e.g. https://api.openai.com/v1 "
                            "(LLMSIM_UPSTREAM)")
    serve.add_argument("--upstream-api-key-env", default=_env("upstream_api_key_env", d.upstream_api_key_env),
                       metavar="VAR", help="proxy: the environment variable that holds the upstream's API key; the "
                                           "key is never written anywhere (LLMSIM_UPSTREAM_API_KEY_ENV)")
    serve.add_argument("--record", type=Path, default=_env("record", None), metavar="DIR",
                       help="proxy: write one cassette per interaction into DIR (LLMSIM_RECORD)")
    serve.add_argument("--cassettes", type=Path, default=_env("cassettes", None), metavar="DIR",
                       help="replay: the cassettes to answer from (LLMSIM_CASSETTES)")
    serve.add_argument("--match", choices=MATCH_MODES, default=_env("match", d.match),
                       help="replay: how a request finds its cassette (LLMSIM_MATCH)")
    serve.add_argument("--on-miss", choices=ON_MISS, default=_env("on_miss", d.on_miss),
                       help="replay: when no cassette matches, answer an error, simulate, or forward to --upstream "
                            "and record (LLMSIM_ON_MISS)")
    scenario = commands.add_parser("scenario", help="work with scripted scenarios")
    scenario_commands = scenario.add_subparsers(dest="action", required=True)
    validate = scenario_commands.add_parser("validate", help="check a scenario file and list its problems")
    validate.add_argument("file", type=Path)
    profile = commands.add_parser("profile", help="work with latency profiles")
    profile_commands = profile.add_subparsers(dest="action", required=True)
    fit = profile_commands.add_parser("fit", help="fit each model's timing from recorded cassettes")
    fit.add_argument("cassettes", type=Path, metavar="DIR")
    fit.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.yaml")
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    extra = list(args.profiles_dir or []) + _paths(str(_env("profiles_dir", "")))
    return Settings(
        host=args.host,
        port=int(args.port),
        backend=args.backend,
        models=args.model or [m for m in str(_env("model", "")).split(",") if m],
        allow_download=bool(args.allow_download),
        trust_remote_code=bool(args.trust_remote_code),
        decode_concurrency=max(1, int(args.decode_concurrency)),
        prompt_concurrency=max(1, int(args.prompt_concurrency)),
        profiles_dir=[DEFAULT_PROFILES_DIR, *extra],
        seed=None if args.seed is None else int(args.seed),
        speed=float(args.speed),
        strict_models=bool(args.strict_models),
        strict_params=bool(args.strict_params),
        store=str(args.store),
        store_max_entries=int(args.store_max_entries),
        store_ttl_seconds=float(args.store_ttl),
        api_key=args.api_key or None,
        admin_key=args.admin_key or None,
        faults_file=Path(args.faults) if args.faults else None,
        scenario_file=Path(args.scenario) if args.scenario else None,
        tool_call_rate=float(args.tool_call_rate),
        text_mode=str(args.text_mode),
        fault_rules=(args.fault or []) + str(_env("fault", "")).split(),
        rpm=None if args.rpm is None else int(args.rpm),
        tpm=None if args.tpm is None else int(args.tpm),
        max_body_bytes=int(args.max_body_bytes),
        workers=int(args.workers),
        worker_connections=int(args.worker_connections),
        read_timeout=float(args.read_timeout),
        upstream=args.upstream or None,
        upstream_api_key_env=str(args.upstream_api_key_env),
        record_dir=Path(args.record) if args.record else None,
        cassettes_dir=Path(args.cassettes) if args.cassettes else None,
        match=str(args.match),
        on_miss=str(args.on_miss),
    )


def exposure_warning(settings: Settings) -> str | None:
    """A warning when the admin API (every prompt, faults for anyone) is open to more than this machine."""
    try:
        loopback = ipaddress.ip_address(settings.host).is_loopback
    except ValueError:
        loopback = settings.host == "localhost"
    if loopback or settings.api_keys or settings.admin_key:
        return None
    return (f"llmsim: warning: serving on {settings.host} with no --api-key or --admin-key: anyone who can reach "
            "it can read every prompt through /llmsim/admin and inject faults into other clients' requests")
def relay_problem(settings: Settings) -> str | None:
    """What stops proxy or replay from starting, before workers fork."""
    if settings.backend == "proxy" and not settings.upstream:
        return "--backend proxy needs --upstream URL"
    if settings.record_dir and settings.backend not in ("proxy", "replay"):
        return "--record works with --backend proxy (or replay with --on-miss proxy)"
    if settings.backend == "replay":
        if settings.cassettes_dir is None:
            return "--backend replay needs --cassettes DIR"
        if settings.on_miss == "proxy" and not settings.upstream:
            return "--on-miss proxy needs --upstream URL"
        if not settings.cassettes_dir.is_dir() and settings.on_miss != "proxy":
            return f"--cassettes: {settings.cassettes_dir} is not a directory"
        try:
            load_cassettes(settings.cassettes_dir) if settings.cassettes_dir.is_dir() else None
        except (ValueError, KeyError, OSError) as exc:
            return f"--cassettes: {exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "scenario":
        return scenarios.validate_command(args.file)
    if args.command == "profile":
        from llmsim.backends.fit import fit_command

        return fit_command(args.cassettes, args.output)
    settings = settings_from_args(args)
    if problem := relay_problem(settings):
        print(f"llmsim: {problem}", file=sys.stderr)
        return 2
    try:
        load_catalog(settings.profiles_dir)  # fail before forking workers, naming the bad file and field
    except ProfileError as exc:
        print(f"llmsim: {exc}", file=sys.stderr)
        return 2
    if settings.backend == "mlx" and (problem := check_models(settings.models, settings.allow_download)):
        print(f"llmsim: {problem}", file=sys.stderr)
        return 2
    try:
        fault_config(settings)  # a bad fault file or rule fails here too
    except FaultConfigError as exc:
        print(f"llmsim: {exc}", file=sys.stderr)
        return 2
    if settings.scenario_file and scenarios.validate_command(settings.scenario_file, quiet=True):
        return 2
    try:
        prepare_store(settings.store)  # a bad --store fails here, and workers find the schema made
    except (ValueError, sqlite3.Error) as exc:
        print(f"llmsim: --store: {exc}", file=sys.stderr)
        return 2
    if warning := exposure_warning(settings):
        print(warning, file=sys.stderr, flush=True)
    from llmsim.server import serve

    serve(settings)  # prints "serving ..." once it answers
    return 0
