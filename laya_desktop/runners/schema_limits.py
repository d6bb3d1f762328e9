"""How large a JSON schema may be before it becomes a llama.cpp grammar; pure, no llama.cpp.

The engine checks every schema here before a request reaches a runner (all five grammar paths
pass dispatch.check_local), and the runner checks again, so that nothing past a limit gets near
the grammar parser. Measured with bench/grammar_limits.py (SmolLM2's 49,152-token vocabulary,
llama-cpp-python 0.3.36, 8 MiB stack; bench/results/grammar_crashes/latest.json and
bench/results/grammar_limits/latest.json hold the sizes and times):

    .venv/bin/python bench/grammar_limits.py --crash-only --budget 5 --ceiling 200000
    .venv/bin/python bench/grammar_limits.py --budget 1 --token-budget-ms 300
    .venv/bin/python bench/grammar_limits.py --trial enum 256

Those grammar steps run on the runner's sampling worker, not in its decode loop
(sampling_worker.py), so they slow the grammar's own request, not the runner's other streams;
the limits keep that request at a few tokens a second at worst.

- A repetition bound (maxLength, maxItems, a pattern's {0,N}) becomes N nested optional groups.
  llama.cpp parses 992 of them, refuses 1,024 to 18,432 cleanly, and segfaults at 19,456 and
  above (stack overflow in its recursive-descent parser). The grammar step slows with N.
- A lower bound (minLength, minItems) is a flat sequence: 131,072 built fine, 10^8 makes the
  converter write gigabytes.
- An enum or anyOf keeps one grammar stack alive per alternative while their prefixes agree, and
  the grammar step tests every vocabulary token against every stack: with shared prefixes a
  token's step grows with the number of values, to seconds in the thousands.
- Optional properties nest in the converter: hundreds are slow to convert and to step through,
  1,000 exhaust Python's recursion. Object nesting is refused by Python's recursion at 512.
"""
from __future__ import annotations

import re

MAX_REPETITION = 500          # upper bounds: nested groups; llama.cpp refuses 1,024, crashes 19,456
MAX_MIN_REPETITION = 4096     # lower bounds: flat sequences
MAX_ENUM = 256                # values of one enum (grammar stacks alive at once)
MAX_ALTERNATIVES = 256        # branches of one anyOf / oneOf
MAX_PROPERTIES = 256          # properties of one object
MAX_DEPTH = 64                # nested JSON containers (an object in an object: 2)
MAX_NODES = 10_000            # JSON values in the whole schema
MAX_PATTERN_CHARS = 1000
MAX_PATTERN_EXPANSION = 10_000   # atoms once the converter has written out a pattern's repetitions
MAX_GRAMMAR_BYTES = 256 << 10    # the GBNF text; what the converter made of everything above

UPPER_BOUNDS = ("maxLength", "maxItems")
LOWER_BOUNDS = ("minLength", "minItems")
ALTERNATIVES = ("anyOf", "oneOf")
LITERALS = ("enum", "const", "default", "examples")   # JSON values, not schemas: not walked


class SchemaTooLarge(ValueError):
    """A schema past one of the limits; `limit` names it, the message says by how much."""

    code = "schema_too_large"

    def __init__(self, limit: str, message: str):
        super().__init__(message)
        self.limit = limit


def check_schema(schema) -> None:
    """Raise SchemaTooLarge when `schema` passes a limit; iterative, so any depth is safe."""
    stack = [(schema, "$", 0)]
    nodes = 0
    while stack:
        node, path, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise SchemaTooLarge("nodes", f"nodes: more than {MAX_NODES} values in the schema")
        if depth > MAX_DEPTH:
            raise SchemaTooLarge("depth", f"depth {depth} > {MAX_DEPTH} at {_short(path)}")
        if isinstance(node, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        _check_keywords(node, path)
        for key, value in node.items():
            if key not in LITERALS and isinstance(value, (dict, list)):
                stack.append((value, f"{path}.{key}", depth + 1))


def _short(path: str) -> str:
    return path if len(path) <= 120 else path[:60] + "..." + path[-57:]


def _check_keywords(node: dict, path: str) -> None:
    for key in UPPER_BOUNDS:
        _bound(node.get(key), key, MAX_REPETITION, path)
    for key in LOWER_BOUNDS:
        _bound(node.get(key), key, MAX_MIN_REPETITION, path)
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) > MAX_ENUM:
        raise SchemaTooLarge("enum", f"enum of {len(enum)} values > {MAX_ENUM} at {path}")
    for key in ALTERNATIVES:
        branches = node.get(key)
        if isinstance(branches, list) and len(branches) > MAX_ALTERNATIVES:
            raise SchemaTooLarge(key, f"{key} of {len(branches)} branches > {MAX_ALTERNATIVES} "
                                      f"at {path}")
    props = node.get("properties")
    if isinstance(props, dict) and len(props) > MAX_PROPERTIES:
        raise SchemaTooLarge("properties", f"{len(props)} properties > {MAX_PROPERTIES} at {path}")
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        check_pattern(pattern, f"{path}.pattern")


def _bound(value, key: str, limit: int, path: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value > limit:
        raise SchemaTooLarge(key, f"{key} {value} > {limit} at {path}")


_QUANTIFIER = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")


def check_pattern(pattern: str, where: str = "pattern") -> None:
    """A regular expression's size once written out as grammar: its bounds, how deep its optional
    repetitions nest, and how many atoms its nested repetitions multiply into."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SchemaTooLarge("pattern", f"pattern of {len(pattern)} characters > "
                                        f"{MAX_PATTERN_CHARS} at {where}")
    size, depth = _pattern_cost(pattern, where)
    if depth > MAX_REPETITION:
        raise SchemaTooLarge("pattern", f"pattern repetitions nest {depth} deep > "
                                        f"{MAX_REPETITION} at {where}")
    if size > MAX_PATTERN_EXPANSION:
        raise SchemaTooLarge("pattern", f"pattern expands to {size} atoms > "
                                        f"{MAX_PATTERN_EXPANSION} at {where}")


def _pattern_cost(pattern: str, where: str) -> tuple[int, int]:
    # frames: [size of finished alternatives, size of the current sequence, deepest nesting];
    # `last` is the latest atom (size, depth), which a quantifier multiplies.
    frames = [[0, 0, 0]]
    last = (0, 0)
    i, n = 0, len(pattern)
    while i < n:
        c, top = pattern[i], frames[-1]
        if c == "(":
            frames.append([0, 0, 0])
            last = (0, 0)
        elif c == ")" and len(frames) > 1:
            done = frames.pop()
            last = (done[0] + done[1], done[2])
            frames[-1][1] += last[0]
            frames[-1][2] = max(frames[-1][2], last[1])
        elif c == "|":
            top[0], top[1] = top[0] + top[1], 0
        elif c in "*+?":
            top[2] = max(top[2], last[1] + 1)
        elif c == "{" and (m := _QUANTIFIER.match(pattern, i)):
            lo = int(m.group(1))
            hi = lo if not m.group(2) else (int(m.group(3)) if m.group(3) else None)
            if lo > MAX_MIN_REPETITION or (hi or 0) > MAX_REPETITION:
                raise SchemaTooLarge("pattern", f"pattern repetition {m.group(0)} > "
                                                f"{{{MAX_MIN_REPETITION},{MAX_REPETITION}}} at {where}")
            copies = max(lo, hi or lo, 1)
            top[1] += last[0] * (copies - 1)
            top[2] = max(top[2], last[1] + (hi - lo if hi is not None else 1))
            last = (last[0] * copies, last[1])
            i = m.end()
            continue
        else:
            if c == "\\":
                i += 1
            elif c == "[":
                i = _class_end(pattern, i)
            last = (1, 0)
            top[1] += 1
        i += 1
    return frames[0][0] + frames[0][1], max(f[2] for f in frames)


def _class_end(pattern: str, i: int) -> int:
    """The index of the `]` closing the character class that opens at i."""
    i += 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i


def check_grammar(gbnf: str) -> None:
    """The converted grammar's own size, whatever in the schema made it."""
    size = len(gbnf.encode())
    if size > MAX_GRAMMAR_BYTES:
        raise SchemaTooLarge("grammar_bytes", f"the grammar built from the schema has {size} "
                                              f"bytes > {MAX_GRAMMAR_BYTES}")


MAX_GRAMMAR_RULES = 4096      # llama.cpp's left-recursion check recurses once per rule in a chain
MAX_GRAMMAR_NESTING = MAX_DEPTH   # parenthesised groups: llama.cpp's parser recurses per level
_GBNF_QUANTIFIER = re.compile(r"\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}")


def check_gbnf(gbnf: str) -> None:
    """A raw GBNF grammar (llama-server's `grammar`), held to the same bounds as the grammars
    built from schemas: its size, its rules, how deep its groups nest, and its repetitions (which
    llama.cpp writes out as copies and nested optional rules). Whether it parses is llama.cpp's
    to say, on the grammar worker."""
    size = len(gbnf.encode())
    if size > MAX_GRAMMAR_BYTES:
        raise SchemaTooLarge("grammar_bytes", f"the grammar has {size} bytes > {MAX_GRAMMAR_BYTES}")
    rules = gbnf.count("::=")
    if rules > MAX_GRAMMAR_RULES:
        raise SchemaTooLarge("grammar_rules", f"the grammar has {rules} rules > {MAX_GRAMMAR_RULES}")
    skeleton, depth, deepest = [], 0, 0
    i, n = 0, len(gbnf)
    while i < n:
        c = gbnf[i]
        if c == "#":                      # a comment, to the end of the line
            while i < n and gbnf[i] not in "\r\n":
                i += 1
            continue
        if c == '"':                      # a literal: one atom
            i += 1
            while i < n and gbnf[i] != '"':
                i += 2 if gbnf[i] == "\\" else 1
            skeleton.append("a")
        elif c == "[":                    # a character class: one atom
            i += 1
            while i < n and gbnf[i] != "]":
                i += 2 if gbnf[i] == "\\" else 1
            skeleton.append("a")
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
            skeleton.append(c)
        elif c == ")":
            depth -= 1
            skeleton.append(c)
        elif c in "|*+?":
            skeleton.append(c)
        elif c == "{" and (m := _GBNF_QUANTIFIER.match(gbnf, i)):
            skeleton.append("{" + m.group(1) + (m.group(2) or "") + (m.group(3) or "") + "}")
            i = m.end()
            continue
        elif c.isalnum() or c in "-_.":   # a rule name or reference: one atom
            while i < n and (gbnf[i].isalnum() or gbnf[i] in "-_."):
                i += 1
            skeleton.append("a")
            continue
        i += 1
    if deepest > MAX_GRAMMAR_NESTING:
        raise SchemaTooLarge("grammar_nesting", f"the grammar's groups nest {deepest} deep > "
                                                f"{MAX_GRAMMAR_NESTING}")
    expanded, optional_depth = _pattern_cost("".join(skeleton), "grammar")
    if optional_depth > MAX_REPETITION:
        raise SchemaTooLarge("grammar_repetition", f"the grammar's repetitions nest "
                                                   f"{optional_depth} deep > {MAX_REPETITION}")
    if expanded > MAX_GRAMMAR_BYTES:
        raise SchemaTooLarge("grammar_repetition", f"the grammar's repetitions write out "
                                                   f"{expanded} atoms > {MAX_GRAMMAR_BYTES}")
