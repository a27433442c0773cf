"""Chat Completions: its contract (`surface.py`), request schema, translator and builder (`completions.py`), and
its steps on the one template (`create.py`)."""
