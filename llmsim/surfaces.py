"""The surfaces this server answers, registered with one line each (the contract: llmsim/surface.py). A new
surface is its folder, which fills the contract, and its line here."""

from __future__ import annotations

from llmsim.chat.surface import CHAT
from llmsim.messages.surface import MESSAGES
from llmsim.responses.surface import RESPONSES
from llmsim.surface import Surface, register

SURFACES: tuple[Surface, ...] = (
    register(RESPONSES),
    register(CHAT),
    register(MESSAGES),
)
DEFAULT = RESPONSES  # whose envelope answers what no surface's routes or prefixes claim
REFUSED = {surface.name: surface.refused for surface in SURFACES}  # what docs/compatibility.md lists
