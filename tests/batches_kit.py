"""What the files-and-batches tests share (tests/test_batches.py, tests/test_batches_restarts.py): request lines,
SDK clients for a server, and waits for a batch's end."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from openai.types.batch_request_counts import BatchRequestCounts as Counts

from llmsim.testing import ServerProcess
from stateful import until

__all__ = ["CLAUDE", "FINAL", "PNG", "Counts", "Start", "anthropic_client", "chat_line", "ended", "finished", "jsonl",
           "lines_of", "message_request", "openai_client"]

Start = Callable[..., ServerProcess]
CLAUDE = "claude-sonnet-4-6"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cf"
                    "c0f01f0005000201e2b2b3a50000000049454e44ae426082")  # one pixel
FINAL = ("completed", "failed", "expired", "cancelled")


def chat_line(custom_id: str, text: str, **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], **body}}


def jsonl(lines: list[Any]) -> bytes:
    return "\n".join(json.dumps(line) for line in lines).encode()


def submitted(client: openai.OpenAI, name: str, lines: list[Any],
              endpoint: str = "/v1/chat/completions") -> openai.types.Batch:
    """A batch of `lines`, uploaded as the JSONL file `name` and created for `endpoint`."""
    uploaded = client.files.create(file=(name, jsonl(lines)), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint=endpoint,  # type: ignore[arg-type]
                                 completion_window="24h")


def message_request(custom_id: str, text: str, **params: Any) -> dict[str, Any]:
    return {"custom_id": custom_id,
            "params": {"model": CLAUDE, "max_tokens": 64, "messages": [{"role": "user", "content": text}], **params}}


def openai_client(server: ServerProcess, api_key: str = "sk-test", **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0, **options)


def anthropic_client(server: ServerProcess, api_key: str = "sk-test", **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=api_key, max_retries=0, **options)


def finished(client: openai.OpenAI, batch_id: str) -> openai.types.Batch:
    return until(lambda: (b := client.batches.retrieve(batch_id)).status in FINAL and b, every=0.05)


def ended(client: anthropic.Anthropic, batch_id: str) -> anthropic.types.messages.MessageBatch:
    return until(lambda: (b := client.messages.batches.retrieve(batch_id)).processing_status == "ended" and b,
                 every=0.05)


def lines_of(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]
