"""Chat Completions: its request schema, and the translator/serializer onto the shared pipeline."""
