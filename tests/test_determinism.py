"""Same seed and input → the same words, in any process; different seeds → different words."""

from __future__ import annotations

from collections.abc import Callable

import openai

from llmsim.testing import ServerProcess


def texts(client: openai.OpenAI, seed: str | None = None, **kwargs: object) -> tuple[str, list[str]]:
    headers = {"X-LLMSim-Seed": seed} if seed else {}
    response = client.responses.create(model="o3", input="Tell me about tea", reasoning={"summary": "auto"},
                                       extra_headers=headers, **kwargs)
    return response.output_text, [response.output[0].summary[0].text]


SEEDED = ("--seed", "5")  # one server for the module's two tests that need a second process (a start: a core 1.5 s)


def test_seed_header_is_reproducible_across_processes(client: openai.OpenAI,
                                                      shared_server: Callable[..., ServerProcess]) -> None:
    other = shared_server(*SEEDED)  # the header's seed is the request's, whatever the server's
    other_client = openai.OpenAI(base_url=other.base_url, api_key="x", max_retries=0)
    assert texts(client, "42") == texts(client, "42") == texts(other_client, "42")
    assert texts(client, "42") != texts(client, "43")


def test_seed_applies_to_streams_too(client: openai.OpenAI) -> None:
    headers = {"X-LLMSim-Seed": "7"}
    plain = client.responses.create(model="gpt-4o", input="hi", extra_headers=headers).output_text
    with client.responses.stream(model="gpt-4o", input="hi", extra_headers=headers) as stream:
        streamed = stream.get_final_response().output_text
    assert plain == streamed


def test_server_seed_flag(shared_server: Callable[..., ServerProcess]) -> None:
    a = shared_server(*SEEDED)
    b = shared_server(env={"LLMSIM_SEED": "5"})
    client_a, client_b = (openai.OpenAI(base_url=s.base_url, api_key="x", max_retries=0) for s in (a, b))
    assert texts(client_a) == texts(client_b)
    assert texts(client_a) == texts(client_a)
    different_input = client_a.responses.create(model="o3", input="Tell me about coffee").output_text
    assert different_input != texts(client_a)[0]


def test_without_a_seed_outputs_vary(client: openai.OpenAI) -> None:
    assert len({texts(client)[0] for _ in range(3)}) == 3


def test_bad_seed_header(client: openai.OpenAI) -> None:
    try:
        client.responses.create(model="gpt-4o", input="hi", extra_headers={"X-LLMSim-Seed": "abc"})
    except openai.BadRequestError as error:
        assert error.body["param"] == "X-LLMSim-Seed"
    else:
        raise AssertionError("a non-integer seed must be refused")
