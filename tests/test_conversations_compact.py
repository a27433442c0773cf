"""POST /responses/compact through the SDK: user messages kept, the rest one compaction item."""

from __future__ import annotations

import openai
import pytest
from openai.types.responses import ResponseCompactionItem


def test_compact_a_chain_and_continue_from_it(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", input="Tell me a long story.", text={"verbosity": "high"})
    second = client.responses.create(model="gpt-4o", input="Go on.", previous_response_id=first.id,
                                     text={"verbosity": "high"})
    compacted = client.responses.compact(model="gpt-4o", previous_response_id=second.id)

    assert compacted.object == "response.compaction" and compacted.id.startswith("resp_")
    *kept, compaction = compacted.output
    assert [item.content[0].text for item in kept] == ["Tell me a long story.", "Go on."]  # type: ignore[union-attr]
    assert isinstance(compaction, ResponseCompactionItem) and compaction.encrypted_content
    usage = compacted.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert 0 < usage.output_tokens < usage.input_tokens

    raw = compacted.model_dump(mode="json", exclude_none=True, warnings=False)["output"]
    follow_up = client.responses.create(model="gpt-4o", input=[*raw, {"role": "user", "content": "And then?"}])
    chained = client.responses.create(model="gpt-4o", input="And then?", previous_response_id=second.id)
    assert follow_up.status == "completed"
    assert follow_up.usage is not None and chained.usage is not None
    assert follow_up.usage.input_tokens < chained.usage.input_tokens  # it stands for the history, smaller


def test_compact_input_items(client: openai.OpenAI) -> None:
    compacted = client.responses.compact(model="gpt-5", input=[
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Summarise our chat."},
    ])
    assert [item.type for item in compacted.output] == ["message", "message", "compaction"]


def test_compact_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:  # a 400 on the live API
        client.responses.compact(model="gpt-4o", previous_response_id="resp_missing")
    assert caught.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError) as missing:
        client.post("/responses/compact", body={"input": "x"}, cast_to=object)
    assert missing.value.code == "missing_required_parameter" and missing.value.param == "model"
