"""`llmsim serve`: every flag also reads an LLMSIM_* environment variable."""

from __future__ import annotations

import argparse
import difflib
import errno
import ipaddress
import math
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from llmsim import preflight
from llmsim.backends import BACKENDS
from llmsim.config import (
    DEFAULT_PROFILES_DIR,
    MATCH_MODES,
    ON_MISS,
    SPEED_EXPECTED,
    TEXT_MODES,
    Settings,
    valid_speed,
)

# Imported where used, not here: with --workers N this process is gunicorn's master, which holds what it imports for
# its life (memory), and the simulator's modules (Faker, jsonschema...) cost ~0.5 s of CPU before the socket is bound.
# A worker imports what it serves with (llmsim/app.py). tests/test_startup.py checks what `serve` imports before.


class _FromEnv(str):
    """A flag's default read from its LLMSIM_* variable, which an error about it names."""

    variable: str


def _env(name: str, default: object) -> object:
    variable = f"LLMSIM_{name.upper()}"
    given = os.environ.get(variable)
    if given is None:
        return default
    value = _FromEnv(given)
    value.variable = variable
    return value


class _Parser(argparse.ArgumentParser):
    """A bad flag is one line naming it and what it allows, not the usage and a traceback-like paragraph; a bad
    value read from an LLMSIM_* variable names the variable, and an unknown flag gets the nearest known ones."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"llmsim: {message.removeprefix('argument ')}{self._did_you_mean(message)} "
                     f"(see {self.prog} --help)\n")

    def _did_you_mean(self, message: str) -> str:
        if not message.startswith("unrecognized arguments:"):
            return ""
        known = _options(self)
        guesses = [close[0] for word in message.split()[2:] if word.startswith("-")
                   for close in [difflib.get_close_matches(word.partition("=")[0], known, n=1)] if close]
        return f"; did you mean {' or '.join(dict.fromkeys(guesses))}?" if guesses else ""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        for name, value in vars(parsed).items():
            if isinstance(value, _FromEnv):  # a plain string from here on
                setattr(parsed, name, str.__str__(value))
        return parsed, extras

    def _get_value(self, action: argparse.Action, arg_string: str) -> object:
        """argparse converts a default read from a variable as if it were given: an error about it names the
        variable, not the flag."""
        variable = arg_string.variable if isinstance(arg_string, _FromEnv) else None
        try:
            value = super()._get_value(action, arg_string)
        except argparse.ArgumentError as exc:
            if variable is None:
                raise
            raise argparse.ArgumentError(None, f"{variable}: {exc.message}") from None
        if variable is not None and action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(None, f"{variable}: invalid choice: {arg_string!r} (choose from "
                                               f"{', '.join(map(repr, action.choices))})")
        return value


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every long flag of `parser` and its subcommands."""
    found: list[str] = []
    for action in parser._actions:
        found += [option for option in action.option_strings if option.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _options(sub)
    return list(dict.fromkeys(found))


class _Version(argparse.Action):
    """`--version`, its number read from the installed package's metadata only when asked: the lookup walks every
    installed distribution (~30 ms, more in a large environment), which every `llmsim serve` would pay."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from importlib.metadata import version

        print(f"{parser.prog} {version('llmsim')}")
        parser.exit()


def _speed(value: str) -> float:
    try:
        speed = float(value)
    except ValueError:
        speed = math.nan
    if not valid_speed(speed):
        raise argparse.ArgumentTypeError(f"speed must be {SPEED_EXPECTED}, got {value!r}")
    return speed


def _number(kind: type[int] | type[float], low: float | None = None, high: float | None = None, *,
            above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite `kind` from `low` (excluded when `above`) to `high`, or an error saying so."""
    words = "an integer" if kind is int else "a number"
    if low is not None and high is not None:
        allowed = f"{words} {'above' if above else 'from'} {low:g}{' up' if above else ''} to {high:g}"
    elif low is not None:
        allowed = f"{words} {'above' if above else 'of at least'} {low:g}"
    else:
        allowed = words

    def parse(value: str) -> float:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {value!r}") from None
        if not (math.isfinite(number) and (low is None or (number > low if above else number >= low))
                and (high is None or number <= high)):
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {value!r}")
        return number

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


_seconds = _number(float, 0, 3600, above=True)
MAX_WORKERS = 256  # processes, each a full server: more is a typo, not a machine


def _url(value: str) -> str:
    parts = urlsplit(value)
    if value and (parts.scheme not in ("http", "https") or not parts.hostname):  # empty: unset
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {value!r}")
    return value


def _flag(value: object) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _paths(value: str) -> list[Path]:
    return [Path(p) for p in value.split(os.pathsep) if p]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="llmsim", description="OpenAI-compatible Responses API server.")
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the server", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                usage="%(prog)s [options]  (every flag also reads LLMSIM_<FLAG>)")
    d = Settings()
    serve.add_argument("--host", default=_env("host", d.host), help="address to bind (LLMSIM_HOST)")
    serve.add_argument("--port", type=_number(int, 1, 65535), default=_env("port", d.port), help="port (LLMSIM_PORT)")
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
    serve.add_argument("--decode-concurrency", type=_number(int, 1),
                       default=_env("decode_concurrency", d.decode_concurrency),
                       help="mlx: sequences decoded together per model; more wait for a slot "
                            "(LLMSIM_DECODE_CONCURRENCY)")
    serve.add_argument("--prompt-concurrency", type=_number(int, 1),
                       default=_env("prompt_concurrency", d.prompt_concurrency),
                       help="mlx: prompts prefilled together per model (LLMSIM_PROMPT_CONCURRENCY)")
    serve.add_argument("--profiles-dir", type=_paths, action="extend", default=None,
                       help=f"extra profile directories, added to {DEFAULT_PROFILES_DIR} (LLMSIM_PROFILES_DIR, "
                            f"'{os.pathsep}'-separated)")
    serve.add_argument("--seed", type=_number(int), default=_env("seed", None),
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
    serve.add_argument("--store-max-entries", type=_number(int, 0),
                       default=_env("store_max_entries", d.store_max_entries),
                       help="responses kept in the store, the oldest finished evicted first, unfinished never; "
                            "0 stores nothing (LLMSIM_STORE_MAX_ENTRIES)")
    serve.add_argument("--store-ttl", type=_number(float, 0), default=_env("store_ttl", d.store_ttl_seconds),
                       help="seconds a stored response lives; 0 = forever (LLMSIM_STORE_TTL)")
    serve.add_argument("--store-min-free", type=_number(float, 0), default=_env("store_min_free", d.store_min_free_mb),
                       metavar="MB", help="SQLite: free space on the store's disk under which /llmsim/health reports "
                                          "it low, before writes fail (LLMSIM_STORE_MIN_FREE)")
    serve.add_argument("--api-key", default=_env("api_key", None),
                       help="require this bearer key (LLMSIM_API_KEY); several comma-separated, each seeing only the "
                            "responses and conversations it made; unset = no auth, one shared scope")
    serve.add_argument("--admin-key", default=_env("admin_key", None),
                       help="require this bearer key on /llmsim/admin (LLMSIM_ADMIN_KEY); unset = an --api-key "
                            "guards it, or with neither it is open")
    serve.add_argument("--allowed-hosts", type=_names, default=_names(str(_env("allowed_hosts", ""))),
                       help="Host names (comma-separated; '.example.com' for its subdomains, '*' for any) served "
                            "besides localhost, loopback addresses and --host; unset = any when bound beyond "
                            "loopback (LLMSIM_ALLOWED_HOSTS)")
    serve.add_argument("--cors-origins", type=_names, default=_names(str(_env("cors_origins", "loopback"))),
                       help="browser origins whose pages may call this server (comma-separated, e.g. "
                            "https://app.example.com; 'loopback' = http(s)://localhost or a loopback address on "
                            "any port, for the API only (the admin API, dashboard and WebSockets take named origins "
                            "only); '*' = any); others get a 403 (LLMSIM_CORS_ORIGINS)")
    serve.add_argument("--faults", type=Path, default=_env("faults", None),
                       help="YAML/JSON file of fault rules and rate limits (LLMSIM_FAULTS)")
    serve.add_argument("--fault", action="append", default=None,
                       help="a fault rule, KIND;key=value;... e.g. '500;first=2', repeatable (LLMSIM_FAULT, "
                            "space-separated); per request: X-LLMSim-Fault header")
    serve.add_argument("--rpm", type=_number(int, 1), default=_env("rpm", None),
                       help="requests per minute per API key and model; unset = unlimited (LLMSIM_RPM)")
    serve.add_argument("--tpm", type=_number(int, 1), default=_env("tpm", None),
                       help="tokens per minute per API key and model; unset = unlimited (LLMSIM_TPM)")
    serve.add_argument("--itpm", type=_number(int, 1), default=_env("itpm", None),
                       help="input tokens per minute per API key and model, as Anthropic counts them; unset = "
                            "unlimited (LLMSIM_ITPM)")
    serve.add_argument("--otpm", type=_number(int, 1), default=_env("otpm", None),
                       help="output tokens per minute per API key and model (max_tokens reserved, settled to the "
                            "output), as Anthropic counts them; unset = unlimited (LLMSIM_OTPM)")
    serve.add_argument("--scenario", type=Path, default=_env("scenario", None),
                       help="YAML/JSON scripted scenario to play (LLMSIM_SCENARIO); admin API: /llmsim/admin/scenarios")
    serve.add_argument("--tool-call-rate", type=_number(float, 0, 1), default=_env("tool_call_rate", d.tool_call_rate),
                       help="sim: chance (0-1) of calling a tool the input did not ask for, under tool_choice auto "
                            "(LLMSIM_TOOL_CALL_RATE)")
    serve.add_argument("--text-mode", choices=TEXT_MODES, default=_env("text_mode", d.text_mode),
                       help="sim: prose shaped by the question, echo of the last user message, lorem filler or "
                            "faker sentences (LLMSIM_TEXT_MODE); per request: X-LLMSim-Text-Mode header")
    serve.add_argument("--max-body-bytes", type=_number(int, 1), default=_env("max_body_bytes", d.max_body_bytes),
                       help="largest request body accepted (LLMSIM_MAX_BODY_BYTES)")
    serve.add_argument("--workers", type=_number(int, 1, MAX_WORKERS), default=_env("workers", d.workers),
                       help="worker processes; the memory store is per process (LLMSIM_WORKERS)")
    serve.add_argument("--worker-connections", type=_number(int, 1),
                       default=_env("worker_connections", d.worker_connections),
                       help="open connections per worker; past it the one idle longest is closed, and a new one "
                            "gets a 503 when all are busy (LLMSIM_WORKER_CONNECTIONS)")
    serve.add_argument("--max-num-seqs", type=_number(int, 1), default=_env("max_num_seqs", d.max_num_seqs),
                       help="paced requests a worker runs at once (vLLM's max_num_seqs); more wait in a queue, "
                            "first come first served and fair across API keys (LLMSIM_MAX_NUM_SEQS)")
    serve.add_argument("--max-queue", type=_number(int, 0), default=_env("max_queue", d.max_queue),
                       help="paced requests a worker keeps waiting; past it a request gets its API's overload "
                            "error (503; Messages: 529) (LLMSIM_MAX_QUEUE)")
    serve.add_argument("--read-timeout", type=_seconds, default=_env("read_timeout", d.read_timeout),
                       help="seconds a request's head (idle keep-alive time included) and its body may take to "
                            "arrive; a slower one is closed, or gets a 408 (LLMSIM_READ_TIMEOUT)")
    serve.add_argument("--ws-idle-timeout", type=_seconds, default=_env("ws_idle_timeout", d.ws_idle_timeout),
                       help="seconds a WebSocket may go without a client message between responses, or leave a "
                            "frame unread; then it is closed (LLMSIM_WS_IDLE_TIMEOUT)")
    serve.add_argument("--graceful-timeout", type=_seconds, default=_env("graceful_timeout", d.graceful_timeout),
                       help="on SIGTERM, seconds in-flight requests may take to finish before their streams are "
                            "ended with a terminal event (LLMSIM_GRACEFUL_TIMEOUT)")
    serve.add_argument("--upstream", type=_url, default=_env("upstream", None),
                       help="proxy: the OpenAI-compatible base URL to forward to, e.g. https://api.openai.com/v1 "
                            "(LLMSIM_UPSTREAM)")
    serve.add_argument("--upstream-api-key-env", default=_env("upstream_api_key_env", d.upstream_api_key_env),
                       metavar="VAR", help="proxy: the environment variable that holds the upstream's API key; the "
                                           "key is never written anywhere (LLMSIM_UPSTREAM_API_KEY_ENV)")
    serve.add_argument("--upstream-keyless", action="store_true", default=_flag(_env("upstream_keyless", False)),
                       help="proxy: forward with no key; without it an unset key variable stops start-up "
                            "(LLMSIM_UPSTREAM_KEYLESS)")
    serve.add_argument("--record", type=Path, default=_env("record", None), metavar="DIR",
                       help="proxy: write one cassette per interaction into DIR (LLMSIM_RECORD)")
    serve.add_argument("--cassettes", type=Path, default=_env("cassettes", None), metavar="DIR",
                       help="replay: the cassettes to answer from (LLMSIM_CASSETTES)")
    serve.add_argument("--match", choices=MATCH_MODES, default=_env("match", d.match),
                       help="replay: how a request finds its cassette (LLMSIM_MATCH)")
    serve.add_argument("--on-miss", choices=ON_MISS, default=_env("on_miss", d.on_miss),
                       help="replay: when no cassette matches, answer an error, simulate, or forward to --upstream "
                            "and record (LLMSIM_ON_MISS)")
    _group_by_topic(serve)
    scenario = commands.add_parser("scenario", help="work with scripted scenarios")
    scenario_commands = scenario.add_subparsers(dest="action", required=True)
    validate = scenario_commands.add_parser("validate", help="check a scenario file and list its problems")
    validate.add_argument("file", type=Path)
    profile = commands.add_parser("profile", help="work with latency profiles")
    profile_commands = profile.add_subparsers(dest="action", required=True)
    fit = profile_commands.add_parser("fit", help="fit each model's timing from recorded cassettes")
    fit.add_argument("cassettes", type=Path, metavar="DIR")
    fit.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.yaml")
    mlx = commands.add_parser("mlx", help="work with the mlx backend's models")
    mlx_commands = mlx.add_subparsers(dest="action", required=True)
    tiny = mlx_commands.add_parser("tiny", help="build a tiny random-weight qwen2 model (no download) in DIR, to try "
                                                "--backend mlx with; it writes random words")
    tiny.add_argument("dir", type=Path, metavar="DIR")
    tiny.add_argument("--seed", type=_number(int), default=0, help="the weights' random seed")
    return parser


def tiny_model_command(path: Path, seed: int) -> int:
    """`llmsim mlx tiny DIR`: the random model the tests use (llmsim/backends/mlx/fixture.py), for a newcomer
    without Apple hardware or a downloaded model; one line on success, one on failure (exit status 2)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        print(f"llmsim: {path}: exists and is not an empty directory", file=sys.stderr)
        return 2
    try:
        from llmsim.backends.mlx.fixture import build_random_model

        path.mkdir(parents=True, exist_ok=True)
        build_random_model(path, "tiny", seed)
    except ImportError as error:
        print(f"llmsim: the mlx backend is not installed ({error.name}): pip install 'llmsim[mlx]'", file=sys.stderr)
        return 2
    print(f"built a tiny random model in {path}: llmsim serve --backend mlx --model tiny={path}")
    return 0


# `serve --help` by topic. A flag named in no topic is listed last, under "other options": add it to one here.
TOPICS: dict[str, tuple[str, ...]] = {
    "server": ("--host", "--port", "--workers", "--worker-connections", "--max-num-seqs", "--max-queue",
               "--read-timeout", "--max-body-bytes",
               "--graceful-timeout", "--ws-idle-timeout", "--allowed-hosts", "--cors-origins"),
    "access": ("--api-key", "--admin-key"),
    "generation": ("--backend", "--speed", "--seed", "--profiles-dir", "--strict-models", "--strict-params",
                   "--text-mode", "--tool-call-rate"),
    "chaos: faults, rate limits, scenarios": ("--faults", "--fault", "--rpm", "--tpm", "--itpm", "--otpm",
                                               "--scenario"),
    "store": ("--store", "--store-max-entries", "--store-ttl", "--store-min-free"),
    "mlx backend": ("--model", "--allow-download", "--trust-remote-code", "--decode-concurrency",
                    "--prompt-concurrency"),
    "proxy, record and replay": ("--upstream", "--upstream-api-key-env", "--upstream-keyless", "--record",
                                 "--cassettes", "--match", "--on-miss"),
}


def _group_by_topic(parser: argparse.ArgumentParser) -> None:
    """Moves each flag, added in the order of the code, into its topic's group (argparse lists groups in the
    order they were made, each flag where it was added)."""
    flags = {option: action for action in parser._actions for option in action.option_strings}
    rest = parser._action_groups[1]  # "options": --help, and any flag of no topic
    for title, options in TOPICS.items():
        group = parser.add_argument_group(title)
        for option in options:
            if (action := flags.get(option)) is not None:
                rest._group_actions.remove(action)
                group._group_actions.append(action)
    parser._action_groups.remove(rest)
    parser._action_groups.append(rest)
    rest.title = "other options" if len(rest._group_actions) > 1 else "options"


def settings_from_args(args: argparse.Namespace) -> Settings:
    extra = list(args.profiles_dir or []) + _paths(str(_env("profiles_dir", "")))
    return Settings(
        host=args.host,
        port=int(args.port),
        backend=args.backend,
        models=args.model or [m for m in str(_env("model", "")).split(",") if m],
        allow_download=bool(args.allow_download),
        trust_remote_code=bool(args.trust_remote_code),
        decode_concurrency=int(args.decode_concurrency),
        prompt_concurrency=int(args.prompt_concurrency),
        profiles_dir=[DEFAULT_PROFILES_DIR, *extra],
        seed=None if args.seed is None else int(args.seed),
        speed=float(args.speed),
        strict_models=bool(args.strict_models),
        strict_params=bool(args.strict_params),
        store=str(args.store),
        store_max_entries=int(args.store_max_entries),
        store_ttl_seconds=float(args.store_ttl),
        store_min_free_mb=float(args.store_min_free),
        api_key=args.api_key or None,
        admin_key=args.admin_key or None,
        allowed_hosts=list(args.allowed_hosts),
        cors_origins=list(args.cors_origins),
        faults_file=Path(args.faults) if args.faults else None,
        scenario_file=Path(args.scenario) if args.scenario else None,
        tool_call_rate=float(args.tool_call_rate),
        text_mode=str(args.text_mode),
        fault_rules=(args.fault or []) + str(_env("fault", "")).split(),
        rpm=None if args.rpm is None else int(args.rpm),
        tpm=None if args.tpm is None else int(args.tpm),
        itpm=None if args.itpm is None else int(args.itpm),
        otpm=None if args.otpm is None else int(args.otpm),
        max_body_bytes=int(args.max_body_bytes),
        workers=int(args.workers),
        worker_connections=int(args.worker_connections),
        max_num_seqs=int(args.max_num_seqs),
        max_queue=int(args.max_queue),
        read_timeout=float(args.read_timeout),
        ws_idle_timeout=float(args.ws_idle_timeout),
        graceful_timeout=float(args.graceful_timeout),
        upstream=args.upstream or None,
        upstream_api_key_env=str(args.upstream_api_key_env),
        upstream_keyless=bool(args.upstream_keyless),
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


def bind_problem(settings: Settings) -> str | None:
    """What stops the server listening on --host and --port, found before gunicorn starts (which would retry a
    port in use for 5 s and then print a traceback). gunicorn binds with SO_REUSEADDR too, so a port that a
    stopped server left in TIME_WAIT is free here as there."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(settings.host, settings.port,
                                                                type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        return f"--host: cannot resolve {settings.host!r}: {getattr(exc, 'strerror', None) or exc}"
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"--port: {settings.port} is in use on {settings.host}: stop what listens there, or choose " \
                       "another port"
            return f"--host: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "scenario":
        from llmsim.chaos import scenarios

        return scenarios.validate_command(args.file)
    if args.command == "profile":
        from llmsim.backends.fit import fit_command

        return fit_command(args.cassettes, args.output)
    if args.command == "mlx":
        return tiny_model_command(args.dir, int(args.seed))
    settings = settings_from_args(args)
    checks = preflight.start(settings)  # in a child, while this process imports gunicorn
    from llmsim.server import serve

    if not preflight.passed(checks):
        return 2
    if problem := bind_problem(settings):  # last: the others are problems even once the port is free
        print(f"llmsim: {problem}", file=sys.stderr)
        return 2
    if warning := exposure_warning(settings):
        print(warning, file=sys.stderr, flush=True)
    serve(settings)  # prints "serving ..." once it answers
    return 0
