"""The Anthropic Messages API surface: schema, translator, event builder, orchestrator."""
