"""Routing lint: rules that can never fire, unknown models, duplicate names, no catch-all,
settings that do nothing.

A later rule can never fire when an earlier enabled rule holds whenever it holds. Per condition
(a list holds when any element does), the earlier rule's condition is implied when the later
rule has the same kind of condition and it is at least as strict: its tags, models and paths are
a subset of the earlier rule's; each of its keywords contains one of the earlier keywords (ignoring
case), so finding it finds that one too; its min is >= and its max <= the earlier bound. An
earlier rule without conditions (a catch-all) therefore shadows everything after it.
"""
from __future__ import annotations

from dataclasses import dataclass

from laya_desktop.config.schema import Config, RouteConfig, RouteMatch, SemanticMatch


@dataclass(frozen=True)
class LintWarning:
    path: str
    message: str
    rule: str | None = None
    shadowed_by: str | None = None
    level: str = "warning"  # "info" for what only matters once a disabled rule is enabled

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def implies(later: RouteMatch, earlier: RouteMatch) -> bool:
    """True when `earlier` holds for every request for which `later` holds."""
    if earlier.semantic is not None and later.semantic != earlier.semantic:
        return False  # a similarity condition: only the very same one is sure to hold too
    if earlier.tags and not (later.tags and set(later.tags) <= set(earlier.tags)):
        return False
    if earlier.model and not (later.model and set(later.model) <= set(earlier.model)):
        return False
    if earlier.path and not (later.path and set(later.path) <= set(earlier.path)):
        return False
    found = [k.lower() for k in earlier.keywords]
    if found and "" not in found:  # "" occurs in every text: no condition
        if not later.keywords or not all(any(e in k.lower() for e in found)
                                         for k in later.keywords):
            return False
    if earlier.min_prompt_chars not in (None, 0):
        if later.min_prompt_chars is None or later.min_prompt_chars < earlier.min_prompt_chars:
            return False
    if earlier.max_prompt_chars is not None:
        if later.max_prompt_chars is None or later.max_prompt_chars > earlier.max_prompt_chars:
            return False
    return True


def lint(config: Config) -> list[LintWarning]:
    warnings: list[LintWarning] = []
    routes = config.routes
    for i, rule in enumerate(routes):
        shadow = _first_shadowing(routes, i)
        if shadow is not None:
            warnings.append(_shadowed(i, rule, shadow, routes[shadow]))
    warnings += _unknown_models(config)
    warnings += _strategy_warnings(config)
    warnings += _semantic_warnings(config)
    warnings += _registered_model_conditions(config)
    warnings += _duplicate_names(routes)
    if not any(r.enabled and r.match.is_empty() for r in routes):
        warnings.append(LintWarning(
            "routes", "no catch-all rule (an enabled rule without conditions): requests that "
            "match no rule get 404 model_not_found unless they name a model"))
    return warnings


def _first_shadowing(routes: list[RouteConfig], i: int) -> int | None:
    for j in range(i):
        if routes[j].enabled and implies(routes[i].match, routes[j].match):
            return j
    return None


def _shadowed(i: int, rule: RouteConfig, j: int, by: RouteConfig) -> LintWarning:
    why = f"rule {by.name!r} (routes[{j}]) matches everything it would"
    if rule.enabled:
        return LintWarning(f"routes[{i}]", f"rule {rule.name!r} can never match: {why}",
                           rule.name, by.name)
    return LintWarning(f"routes[{i}]", f"disabled rule {rule.name!r} could never match if "
                       f"enabled: {why}", rule.name, by.name, level="info")


def _unknown_models(config: Config) -> list[LintWarning]:
    known = {m.name for m in config.models}
    out = []
    for i, rule in enumerate(config.routes):
        if rule.target not in known:
            out.append(LintWarning(f"routes[{i}].target", f"no model named {rule.target!r}",
                                   rule.name))
        for k, name in enumerate(rule.fallback):
            if name not in known:
                out.append(LintWarning(f"routes[{i}].fallback[{k}]", f"no model named {name!r}",
                                       rule.name))
        for k, entry in enumerate(rule.targets):
            if entry.model not in known:
                out.append(LintWarning(f"routes[{i}].targets[{k}]",
                                       f"no model named {entry.model!r}", rule.name))
    return out


def _strategy_warnings(config: Config) -> list[LintWarning]:
    """Strategy settings that do nothing: one target to choose from, a spillover target without a
    limit before others, a fallback that is already a target."""
    out = []
    for i, rule in enumerate(config.routes):
        pool = rule.pool()
        models = [t.model for t in pool]
        if len(pool) < 2 and rule.strategy != "first_available":
            out.append(LintWarning(f"routes[{i}].strategy", f"strategy {rule.strategy!r} has one "
                                   "target to choose from: add models to 'targets'", rule.name))
        if rule.strategy == "spillover":
            for k, entry in enumerate(pool[:-1]):
                if entry.max_active is None:
                    out.append(LintWarning(
                        f"routes[{i}].targets[{rule.targets.index(entry)}]" if entry in rule.targets
                        else f"routes[{i}].target",
                        f"spillover target {entry.model!r} has no max_active: it never fills, so "
                        f"the targets after it ({', '.join(models[k + 1:])}) serve only when it "
                        "fails",
                        rule.name))
        for k, name in enumerate(rule.fallback):
            if len(pool) > 1 and name in models:
                out.append(LintWarning(f"routes[{i}].fallback[{k}]", f"{name!r} is already a "
                                       "target of this rule: as a fallback it adds nothing",
                                       rule.name, level="info"))
    return out


def _semantic_warnings(config: Config) -> list[LintWarning]:
    """A semantic setting the rule's scoring never reads: margin is nearest's, min_probability
    learned's. Set to anything but its default, it says the user expects it to matter."""
    defaults = SemanticMatch()
    out = []
    for i, rule in enumerate(config.routes):
        semantic = rule.match.semantic
        if semantic is None:
            continue
        unused = {"learned": "margin", "nearest": "min_probability"}.get(semantic.scoring)
        if unused and getattr(semantic, unused) != getattr(defaults, unused):
            out.append(LintWarning(
                f"routes[{i}].match.semantic.{unused}",
                f"{unused} {getattr(semantic, unused)} does nothing with scoring "
                f"{semantic.scoring!r}: it applies to scoring "
                f"{'nearest' if unused == 'margin' else 'learned'} only", rule.name))
    return out


def _registered_model_conditions(config: Config) -> list[LintWarning]:
    known = {m.name for m in config.models}
    return [LintWarning(f"routes[{i}].match.model", f"{name!r} is a registered model: requests "
                        "naming it go to it directly, never through the rules", rule.name)
            for i, rule in enumerate(config.routes) for name in rule.match.model if name in known]


def _duplicate_names(routes: list[RouteConfig]) -> list[LintWarning]:
    first: dict[str, int] = {}
    out = []
    for i, rule in enumerate(routes):
        if rule.name in first:
            out.append(LintWarning(f"routes[{i}].name", f"duplicate rule name {rule.name!r} "
                                   f"(also routes[{first[rule.name]}])", rule.name))
        else:
            first.setdefault(rule.name, i)
    return out
