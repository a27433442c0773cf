"""`--backend proxy`: forward to an OpenAI-compatible upstream, optionally recording cassettes."""
