"""The pytest plugin's cassettes: a marked test records through a proxy with --llmsim-record, replays the same
answers afterwards with no upstream, and fails with a clear message when its cassette is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmsim.testing import ServerProcess

pytest_plugins = ["pytester"]

INNER = '''
import json
import os

import pytest


@pytest.mark.llmsim_cassette("greeting")
def test_greeting(llmsim_cassette):
    reply = llmsim_cassette.client.responses.create(model="gpt-4o", input="Say hello.")
    follow_up = llmsim_cassette.client.responses.create(model="gpt-4o", input="Again.",
                                                        previous_response_id=reply.id)
    with open(os.environ["ANSWERS"], "a") as f:
        f.write(json.dumps([reply.id, reply.output_text, follow_up.output_text]) + "\\n")


@pytest.mark.llmsim_cassette("never-recorded")
def test_missing(llmsim_cassette):
    llmsim_cassette.client.responses.create(model="gpt-4o", input="Hi")
'''

CHANGED = '''
import pytest


@pytest.mark.llmsim_cassette("greeting")
def test_changed(llmsim_cassette):
    llmsim_cassette.client.responses.create(model="gpt-4o", input="Say goodbye.")
'''


@pytest.fixture(scope="module")
def upstream() -> Iterator[ServerProcess]:
    with ServerProcess("--speed", "0") as server:  # unseeded: a second recording would say something else
        yield server


def test_record_then_replay(pytester: pytest.Pytester, upstream: ServerProcess, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    answers = tmp_path / "answers.jsonl"
    monkeypatch.setenv("ANSWERS", str(answers))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")  # the recording proxy's upstream key (it must be set)
    pytester.makepyfile(test_inner=INNER)
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "greeting", "--llmsim-record",
                                             "--llmsim-upstream", upstream.base_url)
    recorded.assert_outcomes(passed=1)
    assert len(list((pytester.path / "cassettes" / "greeting").glob("*.json"))) == 2

    upstream.stop()  # replay needs no upstream
    pytester.makepyfile(test_changed=CHANGED)  # the recorded cassette, asked something else
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=1, failed=1, errors=1)  # the missing cassette fails the test's setup
    first, second = (json.loads(line) for line in answers.read_text().splitlines())
    assert first == second  # the same id and words, from the cassette
    replayed.stdout.fnmatch_lines(["*no cassette 'never-recorded'*record it once with `pytest --llmsim-record`*"])
    miss = "*no cassette in*matched this responses request*Nearest: responses-gpt-4o-*differs in: input*"
    replayed.stdout.fnmatch_lines([miss])
