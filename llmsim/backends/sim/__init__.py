"""The simulator: synthesized text, reasoning, tool calls, built-in tools and schema-valid JSON."""
