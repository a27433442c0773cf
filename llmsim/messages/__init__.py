"""The Anthropic Messages API surface: its contract (`surface.py`), schema, translator, event builder, and its
steps on the one template."""
