"""A form's edit applied to the data it was filled from: the fields whose form value changed, and
nothing else. What the form does not show, or shows in its own way (a clamped number, a trimmed
text), is written back as it was read."""
from __future__ import annotations

import copy


def merge_changes(read: dict, shown: dict, now: dict) -> dict:
    """`read` with each field whose form value went from `shown` (the form as it opened) to `now`;
    a field whose value became None is removed (the form left it empty or at its default)."""
    out = copy.deepcopy(read)
    for key in shown.keys() | now.keys():
        if now.get(key) == shown.get(key):
            continue
        if now.get(key) is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(now[key])
    return out
