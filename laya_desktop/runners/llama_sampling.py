"""A request's llama.cpp sampler chain (with an optional JSON-schema grammar) and its logprobs.

The grammar sampler sits after logit bias and penalties and before every sampler that cuts or
picks (top-k, top-p, min-p, temperature, dist / greedy), as in llama-cpp-python's Llama._sample:
those then choose among the tokens the grammar allows, never from a list it would empty.
llama_sampler_sample applies the chain, picks, and accepts the token into every sampler of the
chain, so the grammar advances with the token that was really chosen. A finished grammar allows
only end-of-generation tokens, which is how a JSON answer ends.
"""
from __future__ import annotations

import ctypes
import json
import re

import llama_cpp as L
import numpy as np

from laya_desktop.runners import protocol as P

# llama-cpp-python's converter lets a JSON string hold raw control characters, which no JSON
# parser accepts; llama.cpp's own converter excludes them the same way.
_CHAR_RULE = re.compile(r'^char ::= \[\^"\\\\\]', re.MULTILINE)
_STRICT_CHAR = r'char ::= [^"\\\x7F\x00-\x1F]'


def schema_grammar(schema: dict) -> str:
    """GBNF for JSON valid against `schema`; BadRequest when the converter cannot handle it."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(json.dumps(schema))
    except RecursionError:
        raise P.BadRequest("response_format: the JSON schema nests too deeply") from None
    except Exception as exc:  # the converter asserts, raises ValueError, or trips on odd shapes
        raise P.BadRequest(f"response_format: cannot build a grammar from the JSON schema "
                           f"({type(exc).__name__}: {exc})") from None
    return _CHAR_RULE.sub(lambda _: _STRICT_CHAR, gbnf)


# llama-server's defaults: a repeated sequence may continue across these.
DRY_SEQUENCE_BREAKERS = ("\n", ":", "\"", "*")


def _look_back(last_n: int, n_ctx: int) -> int:
    return n_ctx if last_n < 0 else min(last_n, n_ctx)


def plain_greedy(p: P.SamplingParams) -> bool:
    """Greedy with nothing that changes the logits first: the most likely token, which
    `greedy_token` picks without a sampler chain."""
    return (p.temperature <= 0 and not p.logit_bias and not p.constrained
            and p.dry_multiplier <= 0 and not _penalised(p))


def _penalised(p: P.SamplingParams) -> bool:
    return _repeat(p) != 1.0 or bool(p.frequency_penalty or p.presence_penalty)


def _repeat(p: P.SamplingParams) -> float:
    return p.repeat_penalty if p.repeat_penalty > 0 else 1.0


def greedy_token(row: np.ndarray) -> int:
    """The first token of highest logit in a logits row, as llama.cpp's greedy sampler picks it.

    llama_sampler_sample copies every logit into a fresh candidate array before its chain runs,
    a visible part of a batched decode step with Gemma 3's 262,144-token vocabulary; numpy's
    argmax of the row costs a small fraction of that."""
    return int(row.argmax())


def make_sampler(p: P.SamplingParams, vocab, n_vocab: int, n_ctx: int, grammar=None):
    """The request's sampler chain, or None for plain greedy (`plain_greedy`: the caller picks
    with `greedy_token`); the caller frees a chain with llama_sampler_free. `n_ctx` is the
    sequence's context, which a look-back of -1 means. `grammar` is the request's grammar
    sampler (grammar_worker builds it off the decode loop); the chain takes it over."""
    if plain_greedy(p):
        return None
    chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    add = lambda s: L.llama_sampler_chain_add(chain, s)  # noqa: E731
    if p.logit_bias:
        arr = (L.llama_logit_bias * len(p.logit_bias))(
            *[L.llama_logit_bias(t, b) for t, b in p.logit_bias.items()])
        add(L.llama_sampler_init_logit_bias(n_vocab, len(p.logit_bias), arr))
    if _penalised(p):
        add(L.llama_sampler_init_penalties(n_vocab, _look_back(p.repeat_last_n, n_ctx), _repeat(p),
                                           p.frequency_penalty, p.presence_penalty))
    if p.dry_multiplier > 0:
        breakers = (ctypes.c_char_p * len(DRY_SEQUENCE_BREAKERS))(
            *[b.encode() for b in DRY_SEQUENCE_BREAKERS])
        add(L.llama_sampler_init_dry(vocab, p.dry_multiplier, p.dry_base, p.dry_allowed_length,
                                     _look_back(p.dry_penalty_last_n, n_ctx), breakers,
                                     len(DRY_SEQUENCE_BREAKERS)))
    if p.constrained:
        if not grammar:
            L.llama_sampler_free(chain)
            raise ValueError("a grammar request needs its grammar sampler built first")
        add(grammar)
    if p.temperature <= 0:
        add(L.llama_sampler_init_greedy())
        return chain
    if p.top_k > 0:
        add(L.llama_sampler_init_top_k(p.top_k))
    if p.top_p < 1.0:
        add(L.llama_sampler_init_top_p(p.top_p, 1))
    if p.min_p > 0.0:
        add(L.llama_sampler_init_min_p(p.min_p, 1))
    add(L.llama_sampler_init_temp(p.temperature))
    seed = L.LLAMA_DEFAULT_SEED if p.seed is None else p.seed & 0xFFFFFFFF
    add(L.llama_sampler_init_dist(seed))
    return chain


def logprob_entry(logits, n_vocab: int, token: int, top_n: int, piece) -> dict:
    """The sampled token's log-probability under the model's raw logits (before bias, penalties,
    grammar and temperature, as OpenAI reports them) and the `top_n` most likely tokens."""
    if not isinstance(logits, np.ndarray):   # a copied row when sampled off the decode loop
        logits = np.ctypeslib.as_array(logits, shape=(n_vocab,))
    row = logits.astype(np.float64)
    top = row.max()
    logprobs = row - (top + np.log(np.exp(row - top).sum()))
    entry = _token_entry(token, float(logprobs[token]), piece)
    if top_n > 0:
        best = np.argpartition(-logprobs, top_n - 1)[:top_n] if top_n < n_vocab else np.arange(n_vocab)
        best = best[np.argsort(-logprobs[best], kind="stable")]
        entry["top_logprobs"] = [_token_entry(int(t), float(logprobs[t]), piece) for t in best]
    else:
        entry["top_logprobs"] = []
    return entry


def _token_entry(token: int, logprob: float, piece) -> dict:
    data = piece(token)
    return {"id": token, "token": data.decode("utf-8", "replace"), "logprob": logprob,
            "bytes": list(data)}
