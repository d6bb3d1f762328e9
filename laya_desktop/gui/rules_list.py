"""A plain Python list of routing rules that announces its changes (napari's EventedList, small).

Qt-free on purpose: the Qt model in `rules_model.py` is a thin view that maps these events to
`beginMoveRows`/`endMoveRows` and friends, and tests can drive the list without a QApplication.
Each rule is a plain dict shaped like one entry of `routes:` in models.yaml.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableSequence
from typing import Any

EVENT_NAMES = ("inserting", "inserted", "removing", "removed", "moving", "moved",
               "changed", "resetting", "reset")


class Emitter:
    """One event: a list of callbacks called with keyword arguments, in connection order."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., Any]) -> None:
        self._callbacks.remove(callback)

    def __call__(self, **kwargs: Any) -> None:
        for callback in list(self._callbacks):
            callback(**kwargs)


class Events:
    def __init__(self) -> None:
        for name in EVENT_NAMES:
            setattr(self, name, Emitter())


class RulesList(MutableSequence):
    """Ordered rules; the first rule whose conditions all hold wins."""

    def __init__(self, rules: Iterable[dict] = ()) -> None:
        self._items: list[dict] = list(rules)
        self.events = Events()

    # --- reading -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index):  # type: ignore[override]
        return self._items[index]

    def __iter__(self) -> Iterator[dict]:
        return iter(self._items)

    def names(self) -> list[str]:
        return [r.get("name", "") for r in self._items]

    def index_of(self, name: str) -> int:
        return self.names().index(name)

    def to_list(self) -> list[dict]:
        return [dict(r) for r in self._items]

    # --- changing ------------------------------------------------------------------------------
    def __setitem__(self, index: int, rule: dict) -> None:  # type: ignore[override]
        index = self._normalize(index)
        self._items[index] = rule
        self.events.changed(index=index, value=rule)

    def __delitem__(self, index: int) -> None:  # type: ignore[override]
        index = self._normalize(index)
        self.events.removing(index=index)
        rule = self._items.pop(index)
        self.events.removed(index=index, value=rule)

    def insert(self, index: int, rule: dict) -> None:
        index = max(0, min(index, len(self._items))) if index >= 0 else max(0, len(self._items) + index)
        self.events.inserting(index=index)
        self._items.insert(index, rule)
        self.events.inserted(index=index, value=rule)

    def move(self, src_index: int, dest_index: int) -> bool:
        """Move one rule so that it lands before `dest_index`, counted in the list *before* the move
        (the convention of Qt's beginMoveRows and napari). Moving onto itself changes nothing and
        returns False."""
        n = len(self._items)
        if not (0 <= src_index < n) or not (0 <= dest_index <= n):
            raise IndexError(f"move({src_index}, {dest_index}) out of range for {n} rules")
        if dest_index in (src_index, src_index + 1):
            return False
        self.events.moving(index=src_index, new_index=dest_index)
        rule = self._items.pop(src_index)
        landed = dest_index - 1 if dest_index > src_index else dest_index
        self._items.insert(landed, rule)
        self.events.moved(index=src_index, new_index=dest_index, landed=landed, value=rule)
        return True

    def reset(self, rules: Iterable[dict]) -> None:
        self.events.resetting()
        self._items = list(rules)
        self.events.reset()

    def _normalize(self, index: int) -> int:
        n = len(self._items)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return index


def undo_move(src_index: int, landed: int) -> tuple[int, int]:
    """The move() arguments that undo a move whose rule went from `src_index` to `landed`."""
    return landed, (src_index + 1 if src_index > landed else src_index)


def unique_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    if base not in taken:
        return base
    i = 2
    while f"{base}-{i}" in taken:
        i += 1
    return f"{base}-{i}"
