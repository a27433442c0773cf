"""YAML files (profiles, fault files, scenarios) read with libyaml's parser when PyYAML has it.

PyYAML's pure-Python parser takes ~0.13 s for the bundled profiles, which every worker's start reads (and `serve`'s
checks too, given profiles of the user's: llmsim/preflight.py); libyaml's takes a tenth of that. Both feed the same
safe constructor and resolver, so a valid file gives the same data. An invalid one is parsed again by the
pure-Python parser, whose message (with the line quoted under its mark) is the one users have always seen.
"""

from __future__ import annotations

from typing import Any

import yaml

_FAST: Any = getattr(yaml, "CSafeLoader", None)  # absent when PyYAML was built without libyaml


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, faster."""
    if _FAST is not None:
        try:
            return yaml.load(text, Loader=_FAST)  # noqa: S506  # the safe loader, in C
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)
