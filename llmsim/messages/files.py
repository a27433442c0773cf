"""`file_id` in a Messages request's `document` and `image` blocks (`"source": {"type": "file", ...}`): the file
uploaded to the Files API (llmsim/jobs/files.py), read as the model reads it."""

from __future__ import annotations

from collections.abc import Callable

from llmsim.errors import APIError
from llmsim.messages.schema import CountTokensRequest, DocumentBlock, ImageBlock

FileText = Callable[[str], "str | None"]  # a file's words by its id, in the request's scope; None: no such file


def read(request: CountTokensRequest, text_of: FileText) -> None:
    """Each document block that names a file gets the file's text as its source; a file that is not there (an
    image's too) is the live API's 404."""
    for message in request.messages:
        if isinstance(message.content, str):
            continue
        for block in message.content:
            if not isinstance(block, (DocumentBlock, ImageBlock)) or block.source.get("type") != "file":
                continue
            file_id = str(block.source.get("file_id", ""))
            text = text_of(file_id)
            if text is None:
                raise APIError(f"File not found: {file_id}", status=404)
            if isinstance(block, DocumentBlock):
                block.source = {"type": "text", "media_type": "text/plain", "data": text}
