"""`file_id` in a request's `input_file` and `input_image` parts: the uploaded file (llmsim/jobs/files.py), read
as the model reads it. The stored input keeps the parts as sent; only the prompt reads the file's words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmsim.errors import APIError

FileText = Callable[[str], "str | None"]  # a file's words by its id, in the request's scope; None: no such file


def read(items: list[dict[str, Any]], text_of: FileText) -> list[dict[str, Any]]:
    """`items` with every `input_file` part that names a `file_id` as the file's text; a file that is not there
    is the live API's 404. The items without such parts are the same objects."""
    out = []
    for item in items:
        content = item.get("content") if item.get("type") == "message" else None
        if not isinstance(content, list) or not any(isinstance(part, dict) and part.get("file_id")
                                                    for part in content):
            out.append(item)
            continue
        out.append({**item, "content": [_part(part, text_of) for part in content]})
    return out


def _part(part: Any, text_of: FileText) -> Any:
    if not isinstance(part, dict) or not part.get("file_id"):
        return part
    text = text_of(str(part["file_id"]))
    if text is None:
        raise APIError(f"No such File object: {part['file_id']}", status=404, param="input")
    if part.get("type") == "input_file":
        return {"type": "input_text", "text": text}
    return part  # an image: there, and read as an image
