"""The sampling knobs: one table of names, defaults and ranges for models.yaml's per-model
`sampling` defaults, the HTTP APIs' request fields and the runners' checks.

Defaults follow llama-server's (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, penalties
off). A model's `sampling` block replaces a default for that model, as an Ollama Modelfile's
PARAMETER lines do; a request's own value replaces both.
"""
from __future__ import annotations

from dataclasses import dataclass

LLAMA_ONLY = ("llama_cpp",)
LOCAL = ("llama_cpp", "mlx")


@dataclass(frozen=True)
class Knob:
    name: str
    integer: bool
    default: float
    low: float
    high: float | None   # None: no upper bound
    backends: tuple[str, ...]
    doc: str

    def problem(self, value) -> str | None:
        """Why `value` is not valid for this knob, or None."""
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return f"must be {kind}, got {value!r}"
        if value != value or value in (float("inf"), float("-inf")):
            return f"must be a finite number, got {value!r}"
        if value < self.low or (self.high is not None and value > self.high):
            bounds = (f"between {self.low:g} and {self.high:g}" if self.high is not None
                      else f"at least {self.low:g}")
            return f"must be {bounds}, got {value!r}"
        return None


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("temperature", False, 0.8, 0.0, 2.0, LOCAL, "0 picks the likeliest token (greedy)."),
    Knob("top_p", False, 0.95, 0.0, 1.0, LOCAL, "Nucleus sampling; 1 turns it off."),
    Knob("top_k", True, 40, 0, None, LOCAL, "Keep the k likeliest tokens; 0 turns it off."),
    Knob("min_p", False, 0.05, 0.0, 1.0, LOCAL, "Drop tokens below this share of the likeliest."),
    Knob("repeat_penalty", False, 1.0, 0.0, 10.0, LOCAL,
         "Divide the odds of tokens seen in the last repeat_last_n; 1 turns it off."),
    Knob("repeat_last_n", True, 64, -1, None, LOCAL,
         "Tokens the penalties look back over; -1: the whole context."),
    Knob("frequency_penalty", False, 0.0, -2.0, 2.0, LOCAL, "OpenAI's, per occurrence."),
    Knob("presence_penalty", False, 0.0, -2.0, 2.0, LOCAL, "OpenAI's, once per token seen."),
    Knob("dry_multiplier", False, 0.0, 0.0, 10.0, LLAMA_ONLY,
         "DRY: penalise a token that would extend a repeated sequence; 0 turns it off."),
    Knob("dry_base", False, 1.75, 1.0, 10.0, LLAMA_ONLY, "DRY: growth of the penalty with length."),
    Knob("dry_allowed_length", True, 2, 0, None, LLAMA_ONLY,
         "DRY: repeats up to this many tokens are free."),
    Knob("dry_penalty_last_n", True, -1, -1, None, LLAMA_ONLY,
         "DRY: tokens it looks back over; -1: the whole context."),
)}

INTEGER_KNOBS = tuple(k for k, knob in KNOBS.items() if knob.integer)
LLAMA_ONLY_KNOBS = tuple(k for k, knob in KNOBS.items() if knob.backends == LLAMA_ONLY)


class KnobError(ValueError):
    def __init__(self, name: str, problem: str):
        super().__init__(f"{name} {problem}")
        self.name, self.problem = name, problem


def read_knobs(values: dict) -> dict:
    """The knobs that `values` sets, as their types; KnobError names the first bad one."""
    knobs = {}
    for name, knob in KNOBS.items():
        value = values.get(name)
        if value is None:
            continue
        problem = knob.problem(value)
        if problem:
            raise KnobError(name, problem)
        knobs[name] = int(value) if knob.integer else float(value)
    return knobs


def knob_default(name: str):
    knob = KNOBS[name]
    return int(knob.default) if knob.integer else knob.default
