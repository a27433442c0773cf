"""The hot path's shortcuts give the same bytes and the same response as the general code (issue 14)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmsim.generation import Finish, TextDelta, TextRun, Usage, expand
from llmsim.responses.events import Entropy, EventBuilder, dumps, dumps_event

TRICKY = ["Hi", ' "quoted"', "back\\slash", "tab\tnew\nline", "ctrl\x01\x1f", "déjà vu ✓", " 🙂", "</script>", ""]
LOGPROB = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}


class Fixed(Entropy):
    def item_id(self, prefix: str, index: int, parent: str | None = None) -> str:
        return f"{prefix}_{index}"


def start() -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "usage": None}


def events(quiet: bool = False, logprobs: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    builder = EventBuilder(start(), entropy=Fixed(7), quiet=quiet)
    deltas = [TextDelta(text, logprobs=[LOGPROB] if logprobs else []) for text in TRICKY]
    made = [json.loads(dumps(e)) for e in builder.run(iter([*deltas, Finish("stop", Usage(3, 9))]))]
    return made, builder.response


@pytest.mark.parametrize("obfuscate", [False, True])
def test_a_text_delta_is_written_as_json_dumps_writes_it(obfuscate: bool) -> None:
    builder = EventBuilder(start(), entropy=Entropy(7), obfuscate=obfuscate)
    run = list(builder.run(iter([*(TextDelta(t) for t in TRICKY), Finish("stop", Usage(3, 9))])))
    deltas = [e for e in run if e["type"] == "response.output_text.delta"]
    assert len(deltas) == len(TRICKY) and all(("obfuscation" in e) is obfuscate for e in deltas)
    for event in run:  # the other events (and any delta the shortcut does not know) take the general path
        assert dumps_event(event) == json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def test_a_delta_with_logprobs_or_other_keys_is_still_exact() -> None:
    event = {"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0,
             "content_index": 0, "delta": "x", "logprobs": [{"token": "x", "logprob": -0.5, "top_logprobs": []}]}
    assert dumps_event(event) == json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    extra = {**event, "logprobs": [], "stream_id": "s"}
    assert dumps_event(extra) == json.dumps(extra, separators=(",", ":"), ensure_ascii=False)


def sent(deltas: list[Any], **options: bool) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The serialized events as the pipeline sends a stream: the builder's own, else through dumps_event."""
    builder = EventBuilder(start(), entropy=Fixed(7), **options)
    out = [event if isinstance(event, tuple) else (event["type"], dumps_event(event))
           for event in builder.run(iter([*deltas, Finish("stop", Usage(3, 9))]))]
    return out, builder.response


@pytest.mark.parametrize("obfuscate", [False, True])
@pytest.mark.parametrize("split", [0, 1, 4])
def test_a_text_run_is_sent_as_its_text_deltas_would_be(obfuscate: bool, split: int) -> None:
    """Rendered by the builder, without a dict per delta: the bytes, sequence numbers and response of the deltas
    one by one. `split`: that many deltas come alone first (the message is open when the runs come)."""
    chunks = tuple((text, 1) for text in TRICKY)
    runs = [*(TextDelta(text) for text, _ in chunks[:split]), TextRun(chunks[split:5], 5 - split),
            TextRun((), 0), TextRun(chunks[5:], len(chunks) - 5)]
    one_by_one, response = sent(list(expand(iter(runs))), obfuscate=obfuscate)
    rendered, rendered_response = sent(runs, obfuscate=obfuscate, render=True)
    assert rendered == one_by_one and rendered_response == response
    assert sum(kind == "response.output_text.delta" for kind, _ in rendered) == len(TRICKY)
    assert [json.loads(data)["sequence_number"] for _, data in rendered] == list(range(len(rendered)))
    quiet, quiet_response = sent(runs, obfuscate=obfuscate, quiet=True, render=True)
    assert quiet_response == response
    assert [kind for kind, _ in quiet] == [kind for kind, _ in one_by_one if kind != "response.output_text.delta"]


def test_a_quiet_builder_makes_the_same_response_without_text_events() -> None:
    loud, loud_response = events()
    quiet, quiet_response = events(quiet=True)
    assert quiet_response["output"][0]["content"][0]["text"] == "".join(TRICKY)
    assert quiet_response == loud_response
    assert [e["type"] for e in quiet] == [e["type"] for e in loud if e["type"] != "response.output_text.delta"]
    _, response = events(quiet=True, logprobs=True)
    assert response["output"][0]["content"][0]["logprobs"] == [LOGPROB] * len(TRICKY)


def test_the_obfuscation_padding_is_urlsafe_base64_of_the_seeded_bytes() -> None:
    import base64
    import random

    entropy, same = Entropy(5), random.Random(5)
    assert [entropy.obfuscation() for _ in range(500)] == \
        [base64.urlsafe_b64encode(same.randbytes(6)).decode() for _ in range(500)]
