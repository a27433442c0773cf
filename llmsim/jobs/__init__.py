"""Files and batch jobs on both providers: OpenAI's `/v1/files` and `/v1/batches`, Anthropic's Files (beta) and
Message Batches, over one job runner (`runner.py`) that runs each line as the request it names (`dispatch.py`)."""
