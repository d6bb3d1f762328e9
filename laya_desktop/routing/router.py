"""The compiled router: Router(config) once per config, then decide() per request in microseconds.

Every enabled rule is one bit, in rule order. Each condition is turned into a lookup that yields
the bitmask of rules it lets through (tag -> rules naming it, prompt size -> a bisect into
cumulative masks, ...), so the non-keyword conditions of all rules cost a few integer ANDs.
What is left are the keyword rules that come before the first candidate that needs no keyword;
only they need the user text, and all their keywords are found by one multi-pattern scanner.

Keywords are split into tiers in rule order (64 keywords, then 4x more each tier). A request
scans the first tier, and stops there when a candidate rule inside it matched: rules after it
cannot win. Each keyword sits in exactly one tier, so a request that needs every tier scans each
keyword once, at the price of re-reading the text a few times (a cheap pass each); an early match
skips the Python callbacks for hundreds of later keywords.

That pays off for texts dense in keywords. Ordinary prose finds a few keywords at most, and there
each scan call costs more than the callbacks it saves on the cold CPU the engine decides on
(bench/results/route_engine_runs/latest.json), so the router keeps one more scanner over all
keywords and reads a text once with it while the texts it routed lately found fewer than
DENSE_HITS keywords on average (a running mean that jumps up at once and decays slowly; the
tiers' counts are scaled to all keywords). Either way gives the same decision.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
import threading
from dataclasses import dataclass, field

from laya_desktop.config.schema import Config, RouteConfig
from laya_desktop.routing.request import (USER_TEXT_SEPARATOR, RouteRequest, merge_tags,
                                          text_parts)
from laya_desktop.routing.semantic import SemanticRules, SemanticScore
from laya_desktop.routing.strategy import TargetPool

DENSE_HITS = 10.0  # keywords found per text, on average, above which texts are read tier by tier
_MEAN_WEIGHT = 0.125  # of the latest text in that running mean, when it found fewer
PREFILTERS_KEPT = 4096  # (path, model, tags, prompt size range) keys kept, the first ones seen


@dataclass(frozen=True)
class Decision:
    rule: str | None  # None when the client named a registered model directly
    target: str
    fallbacks: tuple[str, ...]
    direct: bool
    # a rule with several targets: its strategy orders them per request (engine: live figures)
    pool: TargetPool | None = field(default=None, compare=False)
    # the rule's sampling defaults, over each local model's own (a request's values win)
    sampling: dict = field(default_factory=dict, compare=False)

    def candidates(self, book=None) -> list[str]:
        """The models to try in order: the strategy's order of the targets, then the fallbacks."""
        if self.pool is None or book is None:
            return [self.target, *self.fallbacks]
        return [*self.pool.order(book), *self.fallbacks]


@dataclass(frozen=True)
class RuleCheck:
    rule: str
    matched: bool
    reasons: tuple[str, ...]
    semantic: SemanticScore | None = None  # the score, when the rule has a semantic condition


@dataclass(frozen=True)
class Explanation:
    decision: Decision | None
    rules: tuple[RuleCheck, ...]  # every rule in config order, each judged on its own
    note: str = ""


def explanation_json(explanation: Explanation, decision_us: float) -> dict:
    """The shape `laya route --json` prints and POST /admin/route/explain answers."""
    d = explanation.decision
    return {
        "rule": d.rule if d else None,
        "target": d.target if d else None,
        "fallbacks": list(d.fallbacks) if d else [],
        "direct": d.direct if d else False,
        "targets": list(d.pool.models) if d and d.pool else ([d.target] if d else []),
        "strategy": d.pool.strategy if d and d.pool else "first_available",
        "explanation": [_check_json(c) for c in explanation.rules],
        "decision_us": decision_us,
    }


def _check_json(check: RuleCheck) -> dict:
    out = {"rule": check.rule, "matched": check.matched, "reasons": list(check.reasons)}
    if check.semantic is not None:
        out["semantic"] = check.semantic.as_json()
    return out


def _collect(pattern: int, start: int, end: int, flags: int, hits: list) -> None:
    hits.append(pattern)


class _HyperscanScanner:
    """Literal patterns, SINGLEMATCH: one Python callback per distinct keyword found.

    CASELESS folds ASCII letters only, and the patterns are lowered: on an ASCII text that is the
    same test as an exact match in the lowered text, and on a lowered text it is an exact match
    (bytes of other characters are compared as they are)."""

    name = "hyperscan"
    caseless = True

    def __init__(self, patterns: list[bytes]):
        import hyperscan

        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=patterns, ids=list(range(len(patterns))),
                         elements=len(patterns), literal=True,
                         flags=hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_CASELESS)
        self._new_scratch = hyperscan.Scratch
        self._local = threading.local()  # a scratch serves one scan at a time
        self._local.scratch = self._new_scratch(self._db)  # spare the first request its making

    def scan(self, data: bytes) -> list[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._new_scratch(self._db)
        hits: list[int] = []
        self._db.scan(data, _collect, 0, hits, scratch)  # positional: no keyword parsing
        return hits


class _AhoCorasickScanner:
    """Overlapping search, so keywords inside or overlapping other keywords are still found."""

    name = "ahocorasick-rs"
    caseless = False

    def __init__(self, patterns: list[bytes]):
        import ahocorasick_rs

        self._ac = ahocorasick_rs.BytesAhoCorasick(
            patterns, implementation=ahocorasick_rs.Implementation.DFA)

    def scan(self, data: bytes) -> list[int]:
        return [m[0] for m in self._ac.find_matches_as_indexes(data, overlapping=True)]


def _native_scanner_type():
    """Laya's own scanner (routing/_keyscan.c), or None where the extension was not built."""
    try:
        from laya_desktop.routing._keyscan import KeywordScanner
    except ImportError:
        return None

    class _NativeScanner(KeywordScanner):
        """scan(bytes) and scan_parts(list[str]), each one C call: on the cold CPU the engine
        decides on it costs a fraction of hyperscan's call (see _keyscan.c)."""

        name = "keyscan"
        caseless = True

    return _NativeScanner


_NativeScanner = _native_scanner_type()
SCANNERS = ("keyscan", "hyperscan", "ahocorasick")


def make_scanner(patterns: list[bytes], preference: str | None = None):
    """Laya's own scanner when its extension is built, else hyperscan when it is installed and
    works here (it is optional), else ahocorasick-rs."""
    if preference not in (None, *SCANNERS):
        raise ValueError(f"unknown scanner {preference!r} (valid: {', '.join(SCANNERS)})")
    # keyscan and python-hyperscan refuse a NUL in a keyword (the router's message separator; a C
    # string's end to hyperscan): ahocorasick-rs takes it
    has_nul = any(b"\0" in p for p in patterns)
    if preference == "keyscan" or (preference is None and _NativeScanner is not None and not has_nul):
        if _NativeScanner is None:
            raise ImportError("laya_desktop.routing._keyscan is not built (a C compiler and "
                              "Python's headers build it at install)")
        return _NativeScanner(patterns)
    if preference == "hyperscan" or (preference is None and not has_nul):
        try:
            return _HyperscanScanner(patterns)
        except Exception:  # not installed, or no wheel/CPU support on this platform
            if preference == "hyperscan":
                raise
    return _AhoCorasickScanner(patterns)


def _bits(mask: int) -> list[int]:
    """The indices of the bits set in mask, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _bytes(mask: int) -> bytes:
    """mask as a little-endian bitset, as keyscan reads rules."""
    return mask.to_bytes((mask.bit_length() + 7) // 8, "little")


def _encode(text_lower: str) -> bytes:
    # surrogatepass: a JSON body may carry lone surrogates; UTF-8 stays self-synchronizing, so
    # a byte-level substring match is still a character-level one
    return text_lower.encode("utf-8", "surrogatepass")


@dataclass
class _Tier:
    scanner: object
    pattern_rules: list[int]  # pattern id -> rules having that keyword
    users: int  # rules having any keyword of this tier
    resolved: int  # rules whose keywords all lie in this tier or earlier ones

    def rules_found(self, data: bytes) -> int:
        """The rules having a keyword of this tier that occurs in `data`."""
        masks, found = self.pattern_rules, 0
        for pattern in self.scanner.scan(data):
            found |= masks[pattern]
        return found


class Router:
    def __init__(self, config: Config, *, scanner: str | None = None,
                 first_tier_keywords: int | None = 64, dense_hits: float = DENSE_HITS):
        """scanner: 'keyscan' | 'hyperscan' | 'ahocorasick' | None (best available).
        first_tier_keywords: None scans all keywords in one tier.
        dense_hits: see DENSE_HITS (0: always tier by tier, inf: always all keywords at once)."""
        self._dense_hits = dense_hits
        self.config = config
        self.registered = frozenset(m.name for m in config.models)
        self.rules = [r for r in config.routes if r.enabled]
        self._decisions = [_rule_decision(r) for r in self.rules]
        self._direct: dict[str, Decision] = {}
        self._compile_conditions()
        self._compile_keywords(scanner, first_tier_keywords)
        self.semantic = SemanticRules(self.rules)  # embeds the examples now, once per config
        self._semantic_mask = self.semantic.mask
        self._reads_text = bool(self._tiers or self._mins or self._maxs or self.semantic.mask)
        self._chat_scanner = self._one_call_reader(scanner)

    # --- compile -------------------------------------------------------------------------

    def _compile_conditions(self) -> None:
        every = (1 << len(self.rules)) - 1
        self._tag_free, self._tag_masks = _list_condition(self.rules, lambda m: m.tags, every)
        self._model_free, self._model_masks = _list_condition(self.rules, lambda m: m.model, every)
        self._path_free, self._path_masks = _list_condition(self.rules, lambda m: m.path, every)
        mins = {r.match.min_prompt_chars for r in self.rules} - {None}
        maxs = {r.match.max_prompt_chars for r in self.rules} - {None}
        self._mins, self._maxs = sorted(mins), sorted(maxs)
        min_pos = {v: k for k, v in enumerate(self._mins)}
        max_pos = {v: k for k, v in enumerate(self._maxs)}
        self._min_free = self._max_free = 0
        at_most = [0] * len(self._mins)  # at_most[k]: rules whose min is <= mins[k]
        at_least = [0] * len(self._maxs)  # at_least[k]: rules whose max is >= maxs[k]
        for bit, rule in enumerate(self.rules):
            low, high = rule.match.min_prompt_chars, rule.match.max_prompt_chars
            if low is None:
                self._min_free |= 1 << bit
            else:
                at_most[min_pos[low]] |= 1 << bit
            if high is None:
                self._max_free |= 1 << bit
            else:
                at_least[max_pos[high]] |= 1 << bit
        # _min_ok[bisect_right(mins, chars)] and _max_ok[bisect_left(maxs, chars)]
        self._min_ok = [0] + _running_or(at_most)
        self._max_ok = _running_or(at_least[::-1])[::-1] + [0]
        # one bisect into these tells both bisects above: the prompt sizes where a rule's size
        # condition starts or stops holding
        self._length_bounds = sorted({*self._mins, *(m + 1 for m in self._maxs)})
        self._prefilters: dict[tuple, tuple[int, int, int, bytes, int]] = {}

    def _compile_keywords(self, scanner: str | None, first_tier: int | None) -> None:
        rules_of: dict[str, int] = {}  # keyword -> rules having it, in order of first use
        first_rule: dict[str, int] = {}
        self._keyword_rules = 0
        for bit, rule in enumerate(self.rules):
            words = [k.lower() for k in rule.match.keywords]
            if not words or "" in words:  # "" is in every text: no condition at all
                continue
            self._keyword_rules |= 1 << bit
            for word in words:
                rules_of[word] = rules_of.get(word, 0) | 1 << bit
                first_rule.setdefault(word, bit)
        self._tiers: list[_Tier] = []
        self.scanner_name = "none"
        self._caseless = self._reads_parts = False
        words = list(rules_of)
        start = 0
        size = first_tier or len(words)
        while start < len(words):
            end = min(start + size, len(words))
            # a tier ends at a rule boundary: all keywords of its last rule belong to it
            while end < len(words) and first_rule[words[end]] == first_rule[words[end - 1]]:
                end += 1
            tier_words = words[start:end]
            resolved = (1 << first_rule[words[end]]) - 1 if end < len(words) else -1
            impl = make_scanner([_encode(w) for w in tier_words], scanner)
            self.scanner_name, self._caseless = impl.name, impl.caseless
            self._reads_parts = isinstance(impl, _NativeScanner) if _NativeScanner else False
            users = 0
            for w in tier_words:
                users |= rules_of[w]
            self._tiers.append(_Tier(impl, [rules_of[w] for w in tier_words], users, resolved))
            start, size = end, size * 4
        self._whole: _Tier | None = None  # all keywords in one scanner, for sparse texts
        if len(self._tiers) > 1:
            impl = make_scanner([_encode(w) for w in words], scanner)
            self._whole = _Tier(impl, [rules_of[w] for w in words], self._keyword_rules, -1)
        self._keyword_count = len(words)
        self._hits_mean = 0.0  # keywords found per text lately (benign races between threads)

    def _one_call_reader(self, preference: str | None):
        """keyscan over all keywords (none, for a config whose rules only read the prompt's size),
        when its route_chat can decide a chat: no semantic rule needs the text's parts. Like the
        Python path it reads all keywords at once while the chats it read lately were sparse in
        keywords, else tier by tier, keeping its own running mean."""
        if self._semantic_mask or not self._reads_text:
            return None
        if self._tiers:
            every = self._whole or (self._tiers[0] if len(self._tiers) == 1 else None)
            if every is None or not self._reads_parts:
                return None
            reader, masks = every.scanner, every.pattern_rules
        elif _NativeScanner is not None and preference in (None, "keyscan"):
            reader, masks = _NativeScanner([]), []
        else:
            return None
        reader.set_rules([_bits(mask) for mask in masks])
        if self._whole is not None:
            for tier in self._tiers:
                tier.scanner.set_rules([_bits(mask) for mask in tier.pattern_rules])
            reader.set_tiers(tuple((tier.scanner, tier.resolved.bit_length() if tier.resolved >= 0
                                    else len(self.rules), _bytes(tier.users))
                                   for tier in self._tiers), self._dense_hits)
        return reader

    @property
    def tier_count(self) -> int:
        """Keyword scanner tiers (0: no enabled rule has keywords, requests are never scanned)."""
        return len(self._tiers)

    # --- decide --------------------------------------------------------------------------

    def decide_body(self, path: str, body: dict, header_tags: str | None,
                    registered: bool | None = None) -> Decision | None:
        """Extraction plus decision: what X-Laya-Route-Us times.

        Each Python call costs microseconds on the cold CPU the engine decides on, so the common
        shapes are read here: asked_model inlined, merge_tags only when there are tags."""
        if not isinstance(body, dict):  # read as an empty body, as request.py reads it
            body = {}
        model = body.get("model")
        if not isinstance(model, str):
            model = None
        if registered is None:
            registered = model in self.registered
        if registered and model is not None:
            return self._direct_to(model)
        tags = merge_tags(body, header_tags) if header_tags or "tags" in body else ()
        if not self._reads_text:  # no length, keyword or semantic condition: no text to read
            key = (path, model, tags, 0)
            index = (self._prefilters.get(key) or self._prefilter(key, path, model, tags, 0))[4]
            return self._decisions[index] if index >= 0 else None
        chat = self._chat_scanner
        if chat is not None:  # text_parts, the prefilter and the scan in one C call
            index = chat.route_chat(body.get("messages"), path, model, tags, self._length_bounds,
                                    self._prefilters, self._prefilter)
            if index is not None:
                return self._decisions[index] if index >= 0 else None
        user_parts, chars = text_parts(body)
        return self._select(path, model, tags, chars, user_parts)

    def _scan_bytes(self, user_parts: list[str]) -> bytes:
        """What the keyword scanner reads: a caseless scanner takes an ASCII text as it is,
        sparing a lowered copy of a long prompt; any other text is lowered first."""
        text = USER_TEXT_SEPARATOR.join(user_parts)
        if self._caseless and text.isascii():
            return text.encode("ascii")
        return _encode(text.lower())

    def text_to_embed(self, path: str, body: dict, header_tags: str | None) -> str | None:
        """The text decide_body would embed for this request (reaching a semantic rule with a
        text not cached yet), or None: the engine embeds it in a worker thread first."""
        return self.semantic.text_to_embed(lambda: self.decide_body(path, body, header_tags))

    def decide(self, req: RouteRequest) -> Decision | None:
        if req.model is not None and req.model in self.registered:
            return self._direct_to(req.model)
        # the lowered text as the one part: lowering it again changes nothing
        return self._select(req.path, req.model, req.tags, req.prompt_chars, [req.user_text_lower])

    def _direct_to(self, model: str) -> Decision:
        decision = self._direct.get(model)
        if decision is None:
            decision = self._direct[model] = Decision(None, model, (), True)
        return decision

    def _select(self, path, model, tags, chars, user_parts: list[str]) -> Decision | None:
        """user_parts: the user text's parts, joined (and lowered) only if a rule reads them."""
        key = (path, model, tags, bisect_right(self._length_bounds, chars))
        known = self._prefilters.get(key)
        if known is None:
            known = self._prefilter(key, path, model, tags, chars)
        candidates, winner, needed, _, _ = known
        if needed:
            whole = self._whole
            if whole is not None and self._hits_mean < self._dense_hits:  # sparse texts lately
                masks, found = whole.pattern_rules, 0  # whole.rules_found inlined: a call less
                # keyscan reads ASCII messages as they are; anything else is joined and lowered
                hits = whole.scanner.scan_parts(user_parts) if self._reads_parts else None
                if hits is None:  # _scan_bytes inlined: a call less on a cold CPU
                    text = USER_TEXT_SEPARATOR.join(user_parts)
                    hits = whole.scanner.scan(text.encode("ascii") if self._caseless and text.isascii()
                                              else _encode(text.lower()))
                for pattern in hits:
                    found |= masks[pattern]
                n, mean = len(hits), self._hits_mean  # the running mean, inlined: a call less
                self._hits_mean = n if n > mean else mean + (n - mean) * _MEAN_WEIGHT
                found &= needed
                winner = (found & -found) or winner
            else:
                winner = self._scan_tiers(needed, self._scan_bytes(user_parts)) or winner
        if winner & self._semantic_mask:  # a semantic condition may still fail: judge from here
            return self._select_semantic(candidates, winner, user_parts)
        return self._decisions[winner.bit_length() - 1] if winner else None

    def _prefilter(self, key: tuple, path, model, tags, chars) -> tuple[int, int, int, bytes, int]:
        """(candidates, winner, needed, needed_bytes, winner_index) from every condition but the
        keywords: the rules whose other conditions hold, the first of them without keywords, and
        the keyword rules before it (also as little-endian bytes, and the winner's index, -1 for
        none, for keyscan's route_chat). The same for every request of one key, so each key's are
        kept (the text aside, a client sends few kinds of request)."""
        candidates = self._tag_free
        for tag in tags:
            candidates |= self._tag_masks.get(tag, 0)
        candidates &= self._model_free | self._model_masks.get(model, 0)
        candidates &= self._path_free | self._path_masks.get(path, 0)
        if self._mins:  # without any, _min_free holds every rule
            candidates &= self._min_free | self._min_ok[bisect_right(self._mins, chars)]
        if self._maxs:
            candidates &= self._max_free | self._max_ok[bisect_left(self._maxs, chars)]
        no_keywords = candidates & ~self._keyword_rules
        winner = no_keywords & -no_keywords  # lowest bit: the first such rule
        needed = candidates & self._keyword_rules
        if winner:
            needed &= winner - 1  # only keyword rules before it can still win
        known = (candidates, winner, needed, _bytes(needed), winner.bit_length() - 1)
        # models and tags are the clients' strings: past PREFILTERS_KEPT keys a new one is worked
        # out each time (dropping the kept ones instead stalls one request while they all go)
        if len(self._prefilters) < PREFILTERS_KEPT:
            self._prefilters[key] = known
        return known

    def _select_semantic(self, candidates: int, first: int, user_parts: list[str]) -> Decision | None:
        """From `first`, a semantic rule whose other conditions hold, on in rule order.

        Everything before `first` has failed already. From here on each remaining candidate is
        judged: keywords (all tiers scanned once), then the semantic score, the text embedded on
        the first semantic rule only and reused for the rest.
        """
        remaining = candidates & ~(first - 1)
        keyword_rules = remaining & self._keyword_rules
        found = self._keyword_hits(keyword_rules, self._scan_bytes(user_parts)) if keyword_rules else 0
        remaining &= ~keyword_rules | found
        embedded = None
        while remaining:
            bit = remaining & -remaining
            remaining ^= bit
            if bit & self.semantic.mask:
                if embedded is None:
                    embedded = self.semantic.embed(USER_TEXT_SEPARATOR.join(user_parts).lower())
                if not self.semantic.holds(bit.bit_length() - 1, embedded):
                    continue
            return self._decisions[bit.bit_length() - 1]
        return None

    def _keyword_hits(self, needed: int, data: bytes) -> int:
        """Every rule of `needed` whose keyword condition holds (all tiers that have its words)."""
        if self._whole is not None and self._hits_mean < self._dense_hits:
            return self._whole.rules_found(data) & needed
        satisfied = 0
        for tier in self._tiers:
            if needed & tier.users:
                satisfied |= tier.rules_found(data)
        return satisfied & needed

    def _scan_tiers(self, needed: int, data: bytes) -> int:
        """The lowest bit of `needed` whose keyword condition holds, or 0, read tier by tier.

        A rule holds as soon as any of its keywords is found, whatever tier found it; it wins once
        every needed rule before it is resolved (all its keywords lie in tiers already scanned).
        """
        satisfied = seen = read = 0
        result = None
        for tier in self._tiers:
            if needed & tier.users:
                masks = tier.pattern_rules
                hits = tier.scanner.scan(data)
                seen, read = seen + len(hits), read + len(masks)
                for pattern in hits:
                    satisfied |= masks[pattern]
            hit = satisfied & needed
            if hit:
                lowest = hit & -hit
                if not needed & (lowest - 1) & ~tier.resolved:
                    result = lowest
                    break
            elif not needed & ~tier.resolved:
                result = 0
                break
        if read:  # keywords found, scaled from the tiers read to all keywords
            n, mean = seen * self._keyword_count / read, self._hits_mean
            self._hits_mean = n if n > mean else mean + (n - mean) * _MEAN_WEIGHT
        if result is None:
            hit = satisfied & needed
            result = hit & -hit
        return result

    # --- explain (slow path, for people) ---------------------------------------------------

    def explain(self, req: RouteRequest) -> Explanation:
        decision = self.decide(req)
        if decision is not None and decision.direct:
            return Explanation(decision, (), f"model {req.model!r} is registered: served directly, "
                                             "rules not consulted")
        checks = tuple(check_rule(rule, req, self.semantic) for rule in self.config.routes)
        note = "" if decision else "no rule matches: the engine answers 404 model_not_found"
        return Explanation(decision, checks, note)


def _rule_decision(rule: RouteConfig) -> Decision:
    pool = rule.pool()
    if len(pool) < 2:
        return Decision(rule.name, rule.target, tuple(rule.fallback), False, sampling=rule.sampling)
    models = tuple(t.model for t in pool)
    fallbacks = tuple(f for f in rule.fallback if f not in models)
    return Decision(rule.name, models[0], fallbacks, False, TargetPool(
        models, rule.strategy, tuple(1.0 if t.weight is None else float(t.weight) for t in pool),
        tuple(t.max_active for t in pool), rule.affinity_ttl_s if rule.affinity_on else None),
        sampling=rule.sampling)


def check_rule(rule: RouteConfig, req: RouteRequest, semantic: SemanticRules | None = None) -> RuleCheck:
    """Judge one rule on its own, with a reason for each condition (the reference semantics).

    `semantic` (the router's `.semantic`) scores a semantic condition; without it the condition
    is reported unjudged and counts as holding."""
    if not rule.enabled:
        return RuleCheck(rule.name, False, ("disabled",))
    m = rule.match
    held: list[str] = []
    failed: list[str] = []

    def judge(ok: bool, yes: str, no: str) -> None:
        (held if ok else failed).append(yes if ok else no)

    if m.tags:
        judge(any(t in req.tags for t in m.tags), f"tag of {_show(m.tags)} in request tags "
              f"{_show(req.tags)}", f"no tag of {_show(m.tags)} in request tags {_show(req.tags)}")
    if m.keywords:
        found = [k for k in m.keywords if k.lower() in req.user_text_lower]
        judge(bool(found), f"keyword {found[0]!r} found in user text" if found else "",
              f"keywords {_show(m.keywords)} not found in user text")
    if m.min_prompt_chars is not None:
        judge(req.prompt_chars >= m.min_prompt_chars,
              f"prompt has {req.prompt_chars} chars >= min {m.min_prompt_chars}",
              f"prompt has {req.prompt_chars} chars < min {m.min_prompt_chars}")
    if m.max_prompt_chars is not None:
        judge(req.prompt_chars <= m.max_prompt_chars,
              f"prompt has {req.prompt_chars} chars <= max {m.max_prompt_chars}",
              f"prompt has {req.prompt_chars} chars > max {m.max_prompt_chars}")
    if m.model:
        judge(req.model in m.model, f"model {req.model!r} in {_show(m.model)}",
              f"model {req.model!r} not in {_show(m.model)}" if req.model is not None
              else f"no model asked for (rule wants one of {_show(m.model)})")
    if m.path:
        judge(req.path in m.path, f"path {req.path!r} in {_show(m.path)}",
              f"path {req.path!r} not in {_show(m.path)}")
    scored = None
    if m.semantic is not None:
        scored = semantic.score(rule.name, req.user_text_lower) if semantic is not None else None
        if scored is None:
            held.append("semantic condition not scored here")
        else:
            judge(scored.holds, scored.reason(), scored.reason())
    if failed:
        return RuleCheck(rule.name, False, tuple(failed), scored)
    return RuleCheck(rule.name, True, tuple(held) or ("no conditions (catch-all)",), scored)


def _show(items) -> str:
    return "[" + ", ".join(items) + "]"


def _list_condition(rules: list[RouteConfig], field, every: int) -> tuple[int, dict[str, int]]:
    """(rules without this condition, value -> rules listing it)."""
    masks: dict[str, int] = {}
    for bit, rule in enumerate(rules):
        for value in field(rule.match):
            masks[value] = masks.get(value, 0) | 1 << bit
            every &= ~(1 << bit)
    return every, masks


def _running_or(masks: list[int]) -> list[int]:
    out, acc = [], 0
    for m in masks:
        acc |= m
        out.append(acc)
    return out
