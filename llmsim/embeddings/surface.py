"""OpenAI's embeddings as a surface (llmsim/surface.py): POST /embeddings under the OpenAI prefixes, an operation
the relaying backends (proxy, replay) answer on the relay road."""

from __future__ import annotations

from collections.abc import Sequence

from llmsim.embeddings.create import Create
from llmsim.surface import Route, Surface


class Embeddings(Surface):
    name = "embeddings"
    path = "embeddings"
    lean = False  # not a Generation: the lean path forwards only create routes the template runs
    match = ("model", "input", "dimensions", "encoding_format")

    def routes(self) -> Sequence[Route]:
        return (Route("POST", "/embeddings", Create(self), relayed=True),)


EMBEDDINGS = Embeddings()
