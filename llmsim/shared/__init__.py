"""What the surfaces and the shared road all use, owned by no surface: SSE bytes (`rawsse`), the stream's
common pieces (`events`), the forward-compatibility policy (`compat`), the JSON Schema checks (`schema_checks`)
and the watch on a relayed stream (`relayed`)."""
