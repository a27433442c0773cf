"""Built-in (server-run) tools, simulated: the items they produce and the cited answer that follows.

Nothing here touches a network: searches cite invented pages and files, code "runs" by
construction (the printed sum is computed here), images are tiny valid PNGs, MCP servers
expose a made-up tool list. Everything draws from the request's seeded `random.Random`.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

MCP_INPUT_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
                    "additionalProperties": False}


@dataclass
class Cited:
    """An answer message whose annotations point into its text."""

    text: str
    annotations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class HostedResult:
    item: dict[str, Any]
    answer: Cited | None = None  # None: the response ends with the item (an approval request)
    partial_images: tuple[str, ...] = ()


def token(rng: random.Random, length: int) -> str:
    """Letters and digits from the request's generator: ids that repeat under a seed."""
    return "".join(rng.choices(string.ascii_letters + string.digits, k=length))


def web_search(query: str, include: tuple[str, ...], rng: random.Random, fake: Faker) -> HostedResult:
    urls = [f"https://{fake.domain_name()}/{fake.uri_path()}" for _ in range(rng.randint(2, 3))]
    action: dict[str, Any] = {"type": "search", "query": query}
    if "web_search_call.action.sources" in include:
        action["sources"] = [{"type": "url", "url": url} for url in urls]
    answer = Cited("")
    for url in urls:
        sentence = fake.sentence(nb_words=rng.randint(8, 14))[:-1]
        label = url.split("/")[2]
        answer.text += f"{sentence} ("
        start = len(answer.text)
        answer.text += f"[{label}]({url})"
        answer.annotations.append({"type": "url_citation", "start_index": start, "end_index": len(answer.text),
                                   "title": fake.catch_phrase(), "url": url})
        answer.text += "). "
    answer.text = answer.text.rstrip()
    return HostedResult({"type": "web_search_call", "status": "completed", "action": action}, answer)


def file_search(tool: dict[str, Any], query: str, include: tuple[str, ...], rng: random.Random,
                fake: Faker) -> HostedResult:
    files = [(f"file-{token(rng, 22)}", f"{fake.word()}_{fake.word()}.pdf")
             for _ in range(rng.randint(1, min(3, tool.get("max_num_results") or 3)))]
    results = None
    if "file_search_call.results" in include:
        results = [{"file_id": file_id, "filename": name, "score": round(rng.uniform(0.5, 0.99), 4),
                    "text": fake.paragraph(), "attributes": {}} for file_id, name in files]
    answer = Cited("")
    for file_id, name in files:
        answer.text += fake.sentence(nb_words=rng.randint(8, 14))
        answer.annotations.append({"type": "file_citation", "file_id": file_id, "filename": name,
                                   "index": len(answer.text)})
        answer.text += " "
    answer.text = answer.text.rstrip()
    item = {"type": "file_search_call", "queries": [query], "status": "completed", "results": results}
    return HostedResult(item, answer)


def code_interpreter(tool: dict[str, Any], include: tuple[str, ...], rng: random.Random) -> HostedResult:
    values = [rng.randint(1, 999) for _ in range(rng.randint(3, 6))]
    code = f"values = {values}\ntotal = sum(values)\nprint(total)"
    container = tool.get("container")
    container_id = container if isinstance(container, str) else f"cntr_{rng.getrandbits(192):048x}"
    outputs = [{"type": "logs", "logs": f"{sum(values)}\n"}] if "code_interpreter_call.outputs" in include else None
    item = {"type": "code_interpreter_call", "code": code, "container_id": container_id, "outputs": outputs,
            "status": "completed"}
    return HostedResult(item, Cited(f"I ran the numbers: the sum of {values} is {sum(values)}."))


def image_generation(tool: dict[str, Any], prompt_text: str, rng: random.Random) -> HostedResult:
    image = png(16, 16, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    partials = tuple(image for _ in range(min(3, int(tool.get("partial_images") or 0))))
    item = {"type": "image_generation_call", "status": "completed", "result": image, "action": "generate",
            "background": "opaque", "output_format": "png", "quality": "low", "size": "16x16",
            "revised_prompt": prompt_text}
    return HostedResult(item, Cited("Here is the image you asked for."), partials)


def png(width: int, height: int, rgb: tuple[int, int, int]) -> str:
    """A solid-colour PNG, base64: small, and valid for any decoder."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    raw = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(raw).decode()


# --- MCP ----------------------------------------------------------------------------------------


def mcp_tool_names(tool: dict[str, Any]) -> list[str]:
    allowed = tool.get("allowed_tools")
    if isinstance(allowed, dict):
        allowed = allowed.get("tool_names")
    return list(allowed) if allowed else ["search", "fetch"]


def mcp_list_tools(tool: dict[str, Any], fake: Faker) -> dict[str, Any]:
    label = tool.get("server_label", "mcp")
    listed = [{"name": name, "description": f"{name.replace('_', ' ').capitalize()} on {label}: "
               f"{fake.sentence(nb_words=6).lower()}", "input_schema": MCP_INPUT_SCHEMA, "annotations": None}
              for name in mcp_tool_names(tool)]
    return {"type": "mcp_list_tools", "server_label": label, "tools": listed, "error": None}


def needs_approval(tool: dict[str, Any], name: str) -> bool:
    """The real API asks for approval unless `require_approval` says never (for all, or for this tool)."""
    policy = tool.get("require_approval", "always")
    if isinstance(policy, str):
        return policy != "never"
    return name not in ((policy.get("never") or {}).get("tool_names") or [])


def mcp_call(tool: dict[str, Any], name: str, arguments: str, fake: Faker,
             approval_request_id: str | None = None) -> HostedResult:
    output = json.dumps({"result": fake.paragraph(nb_sentences=2)})
    item = {"type": "mcp_call", "server_label": tool.get("server_label", "mcp"), "name": name,
            "arguments": arguments, "output": output, "error": None, "status": "completed",
            "approval_request_id": approval_request_id}
    return HostedResult(item, Cited(f"The {name} tool on {item['server_label']} answered: "
                                    f"{json.loads(output)['result']}"))


def mcp_approval_request(tool: dict[str, Any], name: str, arguments: str) -> HostedResult:
    item = {"type": "mcp_approval_request", "server_label": tool.get("server_label", "mcp"), "name": name,
            "arguments": arguments}
    return HostedResult(item, None)
