"""Embeddings from a loaded model: its last hidden states (the transformer's trunk, after its final norm), averaged
over the text's tokens and made a unit vector. They run on the model's worker thread, where MLX runs, between the
scheduler's steps; the request waits without blocking the worker's other requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmsim.backends.mlx.backend import LoadedModel


def vectors(loaded: LoadedModel, texts: tuple[str, ...]) -> tuple[list[Any], list[int]]:
    """One unit vector (numpy float32) per text, and each text's tokens by the model's tokenizer."""
    ids = [loaded.tokenizer.encode(text)[:loaded.profile.context_window] or [0] for text in texts]
    made = loaded.scheduler.worker.spawn(_pooled, loaded.model, ids).get()
    return list(made or ()), [len(each) for each in ids]


def _pooled(model: Any, ids: list[list[int]]) -> list[Any]:
    import mlx.core as mx
    import numpy as np

    trunk = getattr(model, "model", None)  # mlx-lm's models: the trunk, without the head; else the whole model
    out = []
    for tokens in ids:
        states = (trunk if callable(trunk) else model)(mx.array([tokens]))
        pooled = np.array(mx.mean(states[0].astype(mx.float32), axis=0), dtype=np.float32)
        norm = float(np.linalg.norm(pooled)) or 1.0
        out.append(pooled / norm)
    return out
