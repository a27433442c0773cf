"""The Responses API: its contract (`surface.py`) and steps on the one template (`create.py`), what only it does
on the way (`run.py`, `background.py`), and the canonical request the other surfaces translate into: schema,
translator, event builder, the Response object."""
