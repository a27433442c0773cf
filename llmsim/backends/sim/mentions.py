"""What the user's words name, for the arguments a careful model fills from them before it invents anything:
the place ("in Paris", "in sf": common abbreviations kept as the user wrote them), dates (ISO, "March 3, 2026",
"today", "tomorrow"), numbers with what they count ("3 days" for `days`), and file paths ("calc.py")."""

from __future__ import annotations

import re
from datetime import date, timedelta

from llmsim.backends.sim import edits

MAX_SCAN_CHARS = 2000
# Place abbreviations people type in lower case; each is kept as typed (a tool's enum may list it just so).
ABBREVIATIONS = frozenset("sf nyc ny la dc sd sj atl chi phx bos sea pdx nola philly vegas uk us usa uae eu "
                          "hk sg kl bkk cdmx rio sp".split())
_PLACE = re.compile(r"\b(?:in|at|for|from|to|near)\s+((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)*)")
_ABBREVIATED = re.compile(r"\b(?:in|at|for|from|to|near)\s+([A-Za-z]{2,5})\b")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_NAMED_DATE = re.compile(r"\b(" + "|".join(m[:3] for m in _MONTHS) + r")[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?"
                         r"(?:,?\s+(\d{4}))?\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(today|tomorrow|yesterday)\b", re.IGNORECASE)
_COUNTED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+([a-z]+)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
PLACE_KEYS = ("city", "location", "place", "town", "destination", "where", "region", "area")
DATE_KEYS = ("date", "day", "when", "start_date", "on")
PATH_KEYS = ("path", "file", "file_path", "filepath", "filename", "target_file", "absolute_path")
NUMBER_KEYS = ("n", "count", "number", "amount", "quantity", "limit", "k", "top_k", "num", "value", "x")


def place(text: str) -> str | None:
    """The place the request names: a capitalised name after a preposition, else a known abbreviation."""
    head = text[:MAX_SCAN_CHARS]
    found = _PLACE.search(head)
    if found:
        return found.group(1)
    for match in _ABBREVIATED.finditer(head):
        if match.group(1).lower() in ABBREVIATIONS:
            return match.group(1)
    return None


def when(text: str, today: date | None = None) -> str | None:
    """The date the request names, as ISO 8601."""
    head = text[:MAX_SCAN_CHARS]
    if match := _ISO.search(head):
        return match.group(1)
    today = today or date.today()
    if match := _NAMED_DATE.search(head):
        month = next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(match.group(1).lower()[:3]))
        try:
            return date(int(match.group(3) or today.year), month, int(match.group(2))).isoformat()
        except ValueError:
            return None
    if match := _RELATIVE.search(head):
        shift = {"today": 0, "tomorrow": 1, "yesterday": -1}[match.group(1).lower()]
        return (today + timedelta(days=shift)).isoformat()
    return None


def hints(text: str) -> dict[str, str]:
    """String values by property name, from the request's words."""
    out: dict[str, str] = {}
    if (named := place(text)) is not None:
        out.update(dict.fromkeys(PLACE_KEYS, named))
    if (day := when(text)) is not None:
        out.update(dict.fromkeys(DATE_KEYS, day))
    paths = edits.paths(text)
    if paths:
        out.update(dict.fromkeys(PATH_KEYS, paths[0]))
        out["filepath"] = paths[0]
    numbers = _NUMBER.findall(text[:MAX_SCAN_CHARS])
    if len(numbers) == 1:
        out.update(dict.fromkeys(NUMBER_KEYS, numbers[0]))
    for value, unit in _COUNTED.findall(text[:MAX_SCAN_CHARS]):
        unit = unit.lower()
        for key in (unit, unit[:-1] if unit.endswith("s") else unit + "s", f"num_{unit}"):
            out.setdefault(key, value)
    return out
