"""`llmsim serve` says "serving" only once requests are answered, and never when it cannot start."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import socket
import subprocess
import sys
import types
import urllib.request
from pathlib import Path

import pytest

from llmsim import cli, server, tokens
from llmsim.app import create_app
from llmsim.config import Settings
from llmsim.testing import free_port


def _serve(port: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "llmsim", "serve", "--port", str(port), "--speed", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_serving_is_printed_once_the_server_answers() -> None:
    """One worker serves in the process itself (no master): a closed terminal's SIGHUP leaves it serving, and
    SIGTERM ends it quietly."""
    port = free_port()
    process = _serve(port)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # the line comes once, as the server answers: no retry after it
            if "serving" in line:
                break
        assert line.strip() == f"llmsim: serving sim on http://127.0.0.1:{port}/openai/v1"
        assert Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split() == []
        process.send_signal(signal.SIGHUP)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/llmsim/health", timeout=5) as answer:
            assert answer.status == 200
    finally:
        process.terminate()
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "Traceback" not in output and "Exception ignored" not in output, output


def test_a_server_of_two_workers_opens_no_control_socket_and_a_stopped_one_says_nothing_more(tmp_path: Path
                                                                                             ) -> None:
    """No control socket: gunicorn (25.1 on) would open one in $XDG_RUNTIME_DIR or ~/.gunicorn, the same path for
    every server of the user's: a second server would take the first's, and anyone with the path could change its
    workers. SIGTERM (a Ctrl-C, a container stopped) ends every worker quietly: no traceback at the interpreter's
    exit. One server of two workers shows both (a start costs a core seconds)."""
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "llmsim", "serve", "--port", str(port), "--workers", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert process.stdout is not None
        assert any("serving" in line for line in process.stdout)  # after a warning or two, by the environment
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/llmsim/health", timeout=5) as answer:
            assert answer.status == 200
        written = [path.relative_to(tmp_path) for path in tmp_path.rglob("*") if not path.is_dir()]
        assert all(path.parts[:2] == (".cache", "llmsim") for path in written), written  # the ranks' cache alone
    finally:
        process.terminate()
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "Traceback" not in output and "Exception ignored" not in output, output


def test_serving_is_not_printed_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = _serve(taken.getsockname()[1])
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "serving" not in output
    assert "in use" in output
    assert output.count("\n") == 1, output  # one line, at once: no gunicorn retries or traceback


def test_a_worker_loads_the_default_encoding_before_its_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default profile's encoding is loaded when the worker is ready, before `gc.freeze`: the first request
    does not wait ~0.35 s for it. Another (cl100k, gpt-4-legacy's) loads when a request first needs it: most
    servers never do, and each start saves its ~0.15 s and ~27 MB."""
    app = create_app(Settings())
    catalog = app.extensions["llmsim"].catalog
    wanted = {profile.encoding for profile in (*catalog.profiles, catalog.default)}
    assert wanted == {"o200k_base", "cl100k_base"}  # the shipped profiles use both
    built: list[str] = []  # the encodings built, each reading its ranks once
    read = tokens.load_ranks
    monkeypatch.setattr(tokens, "load_ranks", lambda name: built.append(name) or read(name))
    frozen: list[list[str]] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(list(built)))
    monkeypatch.setattr(gc, "set_threshold", lambda *_: None)
    tokens.encoding.cache_clear()
    server._ready(types.SimpleNamespace(wsgi=app, age=2))
    assert frozen == [[catalog.default.encoding]] == [["o200k_base"]]
    assert tokens.count("hello world", "cl100k_base") == 2  # loaded when first needed
    assert built == ["o200k_base", "cl100k_base"]


BAD_FLAGS = [  # (flags, the flag named, what the line says is allowed)
    (["--port", "99999"], "--port", "an integer from 1 to 65535"),
    (["--port", "0"], "--port", "an integer from 1 to 65535"),
    (["--port", "http"], "--port", "an integer from 1 to 65535"),
    (["--workers", "0"], "--workers", "an integer from 1 to 256"),
    (["--workers", "1000"], "--workers", "an integer from 1 to 256"),
    (["--worker-connections", "0"], "--worker-connections", "an integer of at least 1"),
    (["--rpm", "0"], "--rpm", "an integer of at least 1"),
    (["--tpm", "-5"], "--tpm", "an integer of at least 1"),
    (["--otpm", "0"], "--otpm", "an integer of at least 1"),
    (["--speed", "abc"], "--speed", "must be 0 or a number from 0.01 to 10000"),
    (["--speed", "-1"], "--speed", "must be 0 or a number from 0.01 to 10000"),
    (["--speed", "nan"], "--speed", "must be 0 or a number from 0.01 to 10000"),
    (["--read-timeout", "0"], "--read-timeout", "a number above 0 up to 3600"),
    (["--read-timeout", "inf"], "--read-timeout", "a number above 0 up to 3600"),
    (["--max-body-bytes", "0"], "--max-body-bytes", "an integer of at least 1"),
    (["--store-max-entries", "-1"], "--store-max-entries", "an integer of at least 0"),
    (["--store-ttl", "-1"], "--store-ttl", "a number of at least 0"),
    (["--store-ttl", "inf"], "--store-ttl", "a number of at least 0"),
    (["--tool-call-rate", "1.5"], "--tool-call-rate", "a number from 0 to 1"),
    (["--seed", "seven"], "--seed", "an integer"),
    (["--decode-concurrency", "0"], "--decode-concurrency", "an integer of at least 1"),
    (["--prompt-concurrency", "0"], "--prompt-concurrency", "an integer of at least 1"),
    (["--upstream", "api.openai.com"], "--upstream", "an http:// or https:// URL"),
    (["--backend", "gpt"], "--backend", "choose from 'sim', 'mlx', 'proxy', 'replay'"),
    (["--text-mode", "poetry"], "--text-mode", "choose from 'prose', 'echo', 'lorem', 'faker'"),
    (["--match", "fuzzy"], "--match", "choose from 'normalised', 'exact', 'sequence'"),
    (["--on-miss", "retry"], "--on-miss", "choose from 'error', 'sim', 'proxy'"),
    (["--host", "no-such-host.invalid"], "--host", "cannot resolve"),
    (["--host", "192.0.2.1"], "--host", "cannot listen on 192.0.2.1"),  # TEST-NET-1: on no interface here
]


@pytest.mark.parametrize(("flags", "flag", "allowed"), BAD_FLAGS, ids=[" ".join(case[0]) for case in BAD_FLAGS])
def test_a_bad_flag_is_one_line_and_exit_2_before_the_server_starts(
        flags: list[str], flag: str, allowed: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(server, "serve", lambda _settings: pytest.fail("gunicorn started"))
    try:
        code = cli.main(["serve", "--port", str(free_port()), *flags])
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"llmsim: {flag}: "), err
    assert allowed in err


def test_a_port_in_use_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(server, "serve", lambda _settings: pytest.fail("gunicorn started"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 2
    assert capsys.readouterr().err == (f"llmsim: --port: {port} is in use on 127.0.0.1: stop what listens there, "
                                       "or choose another port\n")


BAD_VARIABLES = [("LLMSIM_WORKERS", "0", "expected an integer from 1 to 256, got '0'"),
                 ("LLMSIM_SPEED", "abc", "speed must be 0 or a number from 0.01 to 10000, got 'abc'"),
                 ("LLMSIM_BACKEND", "gpt", "invalid choice: 'gpt' (choose from 'sim', 'mlx', 'proxy', 'replay')")]


@pytest.mark.parametrize(("variable", "value", "message"), BAD_VARIABLES, ids=[v for v, _, _ in BAD_VARIABLES])
def test_a_bad_environment_variable_is_named_not_its_flag(variable: str, value: str, message: str,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 46, item 11: the flag was not given, so the message names where the value came from."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["serve"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"llmsim: {variable}: {message} (see llmsim serve --help)\n"
    with pytest.raises(SystemExit):  # the same value given as the flag still names the flag
        cli.build_parser().parse_args(["serve", f"--{variable[7:].lower().replace('_', '-')}", value])
    assert capsys.readouterr().err.startswith(f"llmsim: --{variable[7:].lower().replace('_', '-')}: {message}")


@pytest.mark.parametrize(("typed", "meant"), [(["--sped", "0"], "--speed"), (["--hots=x"], "--host"),
                                             (["--portt", "1", "--storr", "x"], "--port or --store")])
def test_an_unknown_flag_gets_did_you_mean(typed: list[str], meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["serve", *typed])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("llmsim: unrecognized arguments: ")
    assert f"; did you mean {meant}? " in err


def test_an_empty_upstream_variable_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMSIM_UPSTREAM", "")
    assert cli.settings_from_args(cli.build_parser().parse_args(["serve"])).upstream is None


def test_the_edges_of_every_range_are_accepted() -> None:
    args = cli.build_parser().parse_args(
        ["serve", "--port", "65535", "--workers", "256", "--worker-connections", "1", "--rpm", "1", "--tpm", "1",
         "--speed", "0", "--read-timeout", "3600", "--max-body-bytes", "1", "--store-max-entries", "0",
         "--store-ttl", "0", "--tool-call-rate", "1", "--seed", "-3", "--decode-concurrency", "1",
         "--prompt-concurrency", "1", "--upstream", "http://127.0.0.1:9/v1"])
    settings = cli.settings_from_args(args)
    assert (settings.port, settings.workers, settings.rpm, settings.speed, settings.read_timeout) == (
        65535, 256, 1, 0.0, 3600.0)
    assert (settings.store_max_entries, settings.store_ttl_seconds, settings.tool_call_rate, settings.seed) == (
        0, 0.0, 1.0, -3)
    assert cli.settings_from_args(cli.build_parser().parse_args(["serve", "--speed", "10000"])).speed == 10000


def test_serve_help_is_grouped_by_topic() -> None:
    parser = cli.build_parser()
    serve = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    text = serve.choices["serve"].format_help()
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == [*cli.TOPICS, "options"]
    for title, options in cli.TOPICS.items():  # each flag under its heading (flags not yet added are skipped)
        section = text.split(f"\n{title}:\n")[1].split("\n\n")[0]
        listed = [option for option in options if f"  {option}" in text]
        assert listed and all(f"  {option}" in section for option in listed), title
    assert text.split("\noptions:\n")[1].split()[:2] == ["-h,", "--help"]  # and nothing else in "options"
    assert len(text.split("\noptions:\n")[1].strip().splitlines()) == 1
