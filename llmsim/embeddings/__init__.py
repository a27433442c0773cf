"""Embeddings: OpenAI's POST /v1/embeddings (create.py, schema.py) and what every surface that embeds shares
(run.py: admission, the backend's vectors, shortening, usage)."""
