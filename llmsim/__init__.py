"""LLMSim: an OpenAI-compatible Responses API server with a simulator and an MLX backend."""

from llmsim.app import create_app
from llmsim.config import Settings

__all__ = ["create_app", "Settings"]
__version__ = "0.1.0"
