"""Saving over a hand-edited models.yaml without losing what its author wrote.

The file is loaded with ruamel.yaml in round-trip mode and changed in place until it holds the new
data, so comments, key order, quoting and flow style survive wherever their value does.

ruamel stores each comment line with the node *above* it: the comment block between two list
items hangs off the last value of the first item. Reordering items as they are would carry the
next item's comment along with the wrong one, so around each update the comment lines between the
entries of a collection are taken out and put back by ownership:

- comment lines directly above an entry (no blank line between, not indented deeper than the
  entry) are that entry's own: they move with it and are removed with it;
- other comment blocks stay below the entry they followed (or the nearest one above that remains);
  entries added right after that entry go between the two;
- the blank lines between entries (after any such block) stay where they were, by position;
- the rest of what follows the last entry stays at the end of the collection.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Callable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, YAMLError
from ruamel.yaml.tokens import CommentToken

FLOW_DEPTH = 3  # new route.match, fallback and tags read best on one line: {tags: [code]}
_NO_DEFAULT = object()
_ROOT = object()
_KEY_ONLY = re.compile(r"^[ -]*[^\s#'\"-][^#]*:\s*(#.*)?$")


@dataclass(frozen=True)
class EachItem:
    """The defaults of every item of a list of mappings (models, routes)."""

    defaults: dict


def update_yaml_text(old_text: str, new: dict, defaults: dict) -> str | None:
    """old_text changed so that it holds `new`; None when old_text is not a YAML mapping.

    `defaults` mirrors `new`'s shape: a key the file does not spell out is not added when its
    value equals the default there.
    """
    yaml = _round_trip_yaml(old_text)
    try:
        root = yaml.load(old_text)
    except YAMLError:
        return None
    if not isinstance(root, CommentedMap):
        return None
    _merge_map(root, new, defaults, _Header(root), depth=0)
    out = io.StringIO()
    yaml.dump(root, out)
    return out.getvalue()


# --- updating values ---------------------------------------------------------------------------

def _merge_map(node: CommentedMap, new: dict, defaults: Any, header: _Header, depth: int) -> None:
    defaults = defaults if isinstance(defaults, dict) else {}
    layout = _Layout.take(node, list(node), header)
    for key in [k for k in node if k not in new]:
        del node[key]
        node.ca.items.pop(key, None)
    previous = None
    for key, value in new.items():
        default = defaults.get(key, _NO_DEFAULT)
        if key in node:
            merged = _merged(node, key, value, default, depth + 1)
            if merged is not node[key]:
                node[key] = merged
        elif _is_default(value, default):
            continue
        else:
            position = list(node).index(previous) + 1 if previous is not None else 0
            node.insert(position, key, _fresh(_pruned(value, default), depth + 1))
        previous = key
    layout.put_back(node, list(node), header)


def _merged(parent: CommentedMap, key: Any, value: Any, default: Any, depth: int) -> Any:
    old = parent[key]
    if isinstance(old, CommentedMap) and isinstance(value, dict):
        _merge_map(old, value, default, _Header(parent, key), depth)
        return old
    if isinstance(old, CommentedSeq) and isinstance(value, list):
        if _named(value):
            items = default.defaults if isinstance(default, EachItem) else {}
            _merge_named_list(old, value, items, _Header(parent, key), depth)
        else:
            _merge_plain_list(old, value, depth)
        return old
    if _same_scalar(old, value) or (isinstance(old, str) and value == [old]):
        return old  # match lists and fallback accept a single string for a one-element list
    return _fresh(value, depth)


def _merge_named_list(seq: CommentedSeq, new: list[dict], item_defaults: dict, header: _Header,
                      depth: int) -> None:
    """Items are matched by name: a kept item keeps its comments wherever it moves."""
    ids = _item_ids(seq)
    layout = _Layout.take(seq, ids, header)
    by_name = {ident: i for i, ident in enumerate(ids) if isinstance(ident, str)}
    items, comments = [], {}
    for position, value in enumerate(new):
        index = by_name.get(value["name"])
        if index is None:
            items.append(_fresh(_pruned(value, item_defaults), depth + 1))
            continue
        _merge_map(seq[index], value, item_defaults, _Header(), depth + 1)
        items.append(seq[index])
        if index in seq.ca.items:
            comments[position] = seq.ca.items[index]
    del seq[:]
    seq.extend(items)
    seq.ca.items.clear()
    seq.ca.items.update(comments)
    layout.put_back(seq, [value["name"] for value in new], header)


def _merge_plain_list(seq: CommentedSeq, new: list, depth: int) -> None:
    for i, value in enumerate(new):
        if i == len(seq):
            seq.append(_fresh(value, depth + 1))
        elif not _same_scalar(seq[i], value):
            seq[i] = _fresh(value, depth + 1)
    del seq[len(new):]


def _item_ids(seq: CommentedSeq) -> list[Any]:
    """Each item's name, or a placeholder no new item matches (no name, or a repeated one)."""
    ids: list[Any] = []
    for item in seq:
        name = item.get("name") if isinstance(item, CommentedMap) else None
        ids.append(name if isinstance(name, str) and name not in ids else object())
    return ids


def _named(values: list) -> bool:
    names = [v.get("name") if isinstance(v, dict) else None for v in values]
    return bool(names) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _same_scalar(old: Any, new: Any) -> bool:
    # 1 == True and "1" != 1: compare kinds too, but let 2 stand for 2.0
    return old == new and all(isinstance(old, kind) == isinstance(new, kind) for kind in (bool, str))


def _is_default(value: Any, default: Any) -> bool:
    if default is _NO_DEFAULT or isinstance(default, EachItem):
        return False
    if isinstance(value, dict) and isinstance(default, dict):
        return all(_is_default(v, default.get(k, _NO_DEFAULT)) for k, v in value.items())
    return _same_scalar(value, default)


def _pruned(value: Any, default: Any) -> Any:
    """A new value without the entries that only repeat defaults."""
    if isinstance(value, list) and isinstance(default, EachItem):
        return [_pruned(item, default.defaults) for item in value]
    if isinstance(value, dict) and isinstance(default, dict):
        return {k: _pruned(v, default.get(k, _NO_DEFAULT)) for k, v in value.items()
                if not _is_default(v, default.get(k, _NO_DEFAULT))}
    return value


def _fresh(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        node: CommentedMap | CommentedSeq = CommentedMap(
            (k, _fresh(v, depth + 1)) for k, v in value.items())
    elif isinstance(value, list):
        node = CommentedSeq(_fresh(v, depth + 1) for v in value)
    else:
        return value
    if depth >= FLOW_DEPTH:
        node.fa.set_flow_style()
    else:
        node.fa.set_block_style()
    return node


# --- moving comments ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Header:
    """Where the comment lines above a collection's first entry are stored.

    The root mapping keeps them itself; a nested collection's are kept by its parent under its
    key; a list item's belong to the list (as the lines above the item), so it has none.
    """

    parent: CommentedMap | None = None
    key: Any = _ROOT

    def _tokens(self) -> list | None:
        if self.parent is None:
            return None
        if self.key is _ROOT:
            comment = self.parent.ca.comment
            return comment[1] if comment and len(comment) > 1 else None
        entry = self.parent.ca.items.get(self.key)
        return entry[3] if entry and len(entry) > 3 else None

    def lines(self) -> list[str]:
        return _token_lines(self._tokens() or [])

    def set(self, lines: list[str]) -> None:
        if self.parent is None or lines == self.lines():
            return
        tokens = _line_tokens(lines) or None  # the emitter breaks the line for an empty list
        if self.key is _ROOT:
            comment = self.parent.ca.comment
            self.parent.ca.comment = [comment[0] if comment else None, tokens]
            return
        self.parent.ca.items.setdefault(self.key, [None] * 4)[3] = tokens
        # ruamel gives the collection the same list; drop that copy so that only one is left
        own = self.parent[self.key].ca.comment
        if own and len(own) > 1:
            own[1] = None


@dataclass
class _Layout:
    """The comment lines between a collection's entries, by owner (see the module docstring)."""

    old_ids: list
    head: list[str]
    own: dict[Any, list[str]]        # the lines directly above an entry
    after: dict[Any, list[str]]      # the comment block below an entry
    separator: dict[Any, list[str]]  # the blank lines below that, for all but the last entry
    tail: list[str]

    @classmethod
    def take(cls, coll: CommentedMap | CommentedSeq, ids: list, header: _Header) -> _Layout:
        """Detach the lines after every entry (each entry keeps its end-of-line comment)."""
        keys = _keys(coll)
        if not keys:
            return cls([], header.lines(), {}, {}, {}, [])
        above = [_take_pre(coll, key) for key in keys]
        gaps = [_take_gap(coll, key) + lines for key, lines in zip(keys, above[1:])]
        gaps.append(_take_gap(coll, keys[-1]) + _take_end(coll))
        limit = coll.lc.col or 0
        head, first_own = _split_gap(header.lines() + above[0], limit)
        layout = cls(list(ids), head, {ids[0]: first_own}, {}, {}, [])
        for i in range(len(ids) - 1):
            block, layout.own[ids[i + 1]] = _split_gap(gaps[i], limit)
            end = _end_of(block, lambda line: True)
            layout.after[ids[i]], layout.separator[ids[i]] = block[:end], block[end:]
        # lines indented into the last entry belong to it, not to what follows the collection
        end = _end_of(gaps[-1], lambda line: _indent(line) > limit)
        layout.after[ids[-1]], layout.tail = gaps[-1][:end], gaps[-1][end:]
        return layout

    def put_back(self, coll: CommentedMap | CommentedSeq, ids: list, header: _Header) -> None:
        remaining = set(ids)
        blocks, orphans = self._blocks_for(remaining)
        separators = [self.separator[i] for i in self.old_ids if i in remaining and i in self.separator]
        header.set(_join(self.head, *orphans, self.own.get(ids[0], []) if ids else []))
        below: dict[int, list[list[str]]] = {}
        for j, ident in enumerate(ids):
            if ident in blocks:
                below[j] = blocks[ident]
            elif j - 1 in below:
                # so that a commented-out example of the new entry is still there when it goes
                below[j] = below.pop(j - 1)
        for j, key in enumerate(_keys(coll)):
            if j == len(ids) - 1:
                lines = _join(*below.get(j, []), self.tail)
            else:
                separator = separators[min(j, len(separators) - 1)] if separators else []
                lines = _join(*below.get(j, []), separator, self.own.get(ids[j + 1], []))
            _append_gap(coll, key, lines)

    def _blocks_for(self, remaining: set) -> tuple[dict[Any, list[list[str]]], list[list[str]]]:
        """The blocks below each remaining entry: its own block, then those of the removed entries
        that followed it (with their blank lines); the blocks of removed entries above every
        remaining one go to the header."""
        blocks: dict[Any, list[list[str]]] = {}
        orphans: list[list[str]] = []
        target = orphans
        for ident in self.old_ids:
            if ident in remaining:
                target = blocks.setdefault(ident, [])
                target.append(self.after.get(ident, []))
            else:
                target += [self.after.get(ident, []), self.separator.get(ident, [])]
        return blocks, orphans


def _join(*blocks: list[str]) -> list[str]:
    """The blocks one after the other, without adding a blank line where one already ends."""
    lines: list[str] = []
    for block in blocks:
        start = 0
        while lines and not lines[-1].strip() and start < len(block) and not block[start].strip():
            start += 1
        lines += block[start:]
    return lines


def _end_of(lines: list[str], belongs: Callable[[str], bool]) -> int:
    """The index just past the last comment line that `belongs`."""
    return max((n + 1 for n, line in enumerate(lines) if line.strip() and belongs(line)), default=0)


def _keys(coll: CommentedMap | CommentedSeq) -> list:
    return list(coll) if isinstance(coll, CommentedMap) else list(range(len(coll)))


def _split_gap(lines: list[str], limit: int) -> tuple[list[str], list[str]]:
    """(the block that stays, the comment lines directly above the next entry)."""
    i = len(lines)
    while i > 0 and lines[i - 1].strip() and _indent(lines[i - 1]) <= limit:
        i -= 1
    return lines[:i], lines[i:]


def _last_path(coll: CommentedMap | CommentedSeq, key: Any) -> list[tuple[Any, Any]]:
    """(collection, key) from an entry down to its deepest last scalar or flow collection: the
    comments after the entry are stored there, or at the end of a block collection on the way."""
    path = [(coll, key)]
    value = coll[key]
    while isinstance(value, (CommentedMap, CommentedSeq)) and len(value) and not value.fa.flow_style():
        path.append((value, _keys(value)[-1]))
        value = value[path[-1][1]]
    return path


def _comment_slot(coll: CommentedMap | CommentedSeq, key: Any, create: bool) -> tuple[list | None, int]:
    index = 2 if isinstance(coll, CommentedMap) else 0
    entry = coll.ca.items.get(key)
    if entry is None and create:
        entry = coll.ca.items[key] = [None] * 4
    return entry, index


def _take_gap(coll: CommentedMap | CommentedSeq, key: Any) -> list[str]:
    """Detach the whole lines after an entry; its end-of-line comment stays."""
    path = _last_path(coll, key)
    entry, index = _comment_slot(*path[-1], create=False)
    token = entry[index] if entry else None
    lines: list[str] = []
    if token is not None:
        eol, lines = _split_token(token.value)
        if eol:
            token.value = eol
        else:
            entry[index] = None
    for inner, _ in reversed(path[1:]):
        lines += _take_end(inner)
    return lines


def _take_pre(coll: CommentedMap | CommentedSeq, key: Any) -> list[str]:
    """Detach the lines ruamel stores above an entry (after a flow collection it does)."""
    entry = coll.ca.items.get(key)
    if not entry or len(entry) < 2 or not entry[1]:
        return []
    lines = _token_lines(entry[1])
    entry[1] = None
    return lines


def _take_end(coll: CommentedMap | CommentedSeq) -> list[str]:
    lines = _token_lines(coll.ca.end or [])
    coll.ca.end = []
    return lines


def _append_gap(coll: CommentedMap | CommentedSeq, key: Any, lines: list[str]) -> None:
    """Write lines after an entry, all in one place: after its last value."""
    if not lines:
        return
    entry, index = _comment_slot(*_last_path(coll, key)[-1], create=True)
    if entry[index] is None:
        entry[index] = CommentToken("\n" + "".join(lines), CommentMark(0), None)
    else:
        entry[index].value += "".join(lines)


def _split_token(value: str) -> tuple[str, list[str]]:
    """A trailing comment's text as (its end-of-line comment, the whole lines after it)."""
    eol, _, rest = value.partition("\n") if value.startswith("#") else ("", "", value[1:])
    lines = rest.splitlines(keepends=True)
    return (eol + "\n" if eol else ""), [line if line.endswith("\n") else line + "\n" for line in lines]


def _token_lines(tokens: list) -> list[str]:
    text = "".join(t.value if t.value.startswith("\n") else " " * t.column + t.value for t in tokens)
    return text.splitlines(keepends=True)


def _line_tokens(lines: list[str]) -> list[CommentToken]:
    return [CommentToken(line.lstrip(" ") if line.strip() else "\n",
                         CommentMark(_indent(line) if line.strip() else 0), None)
            for line in lines]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


# --- the file's own layout ---------------------------------------------------------------------

def _round_trip_yaml(text: str) -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a user's long line
    mapping, sequence, offset = _indentation(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.explicit_start = _has_document_start(text)
    return yaml


def _indentation(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as the file uses them; the repository's
    style where the file does not show them."""
    mapping = sequence = offset = None
    parent = None  # column of the key of a 'key:' line with its value below
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        column = _indent(line)
        if parent is not None and stripped.startswith("- ") and column >= parent and sequence is None:
            offset = column - parent  # a list may start in its key's column
            sequence = column + 1 + _indent(stripped[1:]) - parent
        elif parent is not None and column > parent and mapping is None:
            mapping = column - parent
        parent = len(line) - len(line.lstrip(" -")) if _KEY_ONLY.match(line) else None
    return mapping or 2, sequence or 4, offset if offset is not None else 2


def _has_document_start(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.startswith("---")
    return False
