"""The detail of one request-log entry: where it went and why, as plain text for the detail pane.

The conditions themselves come from the engine in English (as its API and lint messages do);
the sentences around them are translated.
"""
from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QCoreApplication

from laya_desktop.gui.request_log_model import fmt_ms, fmt_tokens


def _when(t) -> str:
    if not isinstance(t, (int, float)):
        return "?"
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _outcome(entry: dict) -> str:
    rule, model, status = entry.get("rule"), entry.get("model"), entry.get("status")
    if rule == "direct":
        text = QCoreApplication.translate(
            "RequestWhy", "The client named the model {model}: no rule was consulted.")
        return text.format(model=model or "?")
    if rule:
        text = QCoreApplication.translate(
            "RequestWhy", "Rule {rule} sent it to {model}; the answer was {status}.")
        return text.format(rule=rule, status=status,
                           model=model or QCoreApplication.translate("RequestWhy", "no model"))
    text = QCoreApplication.translate("RequestWhy", "No rule routed it; the answer was {status}.")
    return text.format(status=status)


def _rules(entry: dict, why: dict) -> list[str]:
    lines: list[str] = []
    if why.get("matched"):
        lines += ["", QCoreApplication.translate("RequestWhy", "Why it matched:")]
        lines += [f"  • {reason}" for reason in why["matched"]]
    passed = why.get("passed_over") or []
    if passed:
        lines += ["", QCoreApplication.translate("RequestWhy", "Earlier rules passed over:")]
        lines += [f"  • {p.get('rule')}: {'; '.join(p.get('reasons') or [])}" for p in passed]
        if why.get("passed_over_more"):
            more = QCoreApplication.translate("RequestWhy", "… and {n} more")
            lines.append("  " + more.format(n=why["passed_over_more"]))
    elif entry.get("rule") not in ("direct", None) and why.get("matched"):
        lines += ["", QCoreApplication.translate(
            "RequestWhy", "It is the first rule that holds: no earlier rule was passed over.")]
    return lines


def _models(entry: dict, why: dict) -> list[str]:
    lines: list[str] = []
    if why.get("candidates"):
        text = QCoreApplication.translate("RequestWhy", "Candidates, in the order tried: {models}")
        lines += ["", text.format(models=", ".join(why["candidates"]))]
    for attempt in why.get("tried") or []:
        text = QCoreApplication.translate("RequestWhy", "{model} could not serve it ({code})")
        code = attempt.get("code") or "?"
        lines.append("  " + text.format(model=attempt.get("model"), code=code))
    if entry.get("fallback_from"):
        text = QCoreApplication.translate(
            "RequestWhy", "Served by the fallback {model} instead of {target}.")
        lines.append(text.format(model=entry.get("model"), target=entry["fallback_from"]))
    return lines


def why_text(entry: dict) -> str:
    head = QCoreApplication.translate("RequestWhy", "Request #{seq} at {time}: {path} ({api})")
    lines = [head.format(seq=entry.get("seq", "?"), time=_when(entry.get("t")),
                         path=entry.get("path") or "?", api=entry.get("api") or "?"),
             _outcome(entry)]
    why = entry.get("why") or {}
    if not why:
        lines.append(QCoreApplication.translate(
            "RequestWhy", "The engine recorded no routing detail for this request."))
        return "\n".join(lines)
    lines += _rules(entry, why) + _models(entry, why)
    figures = QCoreApplication.translate(
        "RequestWhy", "Tokens: {tokens}; time to first token {ttft}; duration {duration}")
    lines += ["", figures.format(tokens=fmt_tokens(entry), ttft=fmt_ms(entry.get("ttft_ms")),
                                 duration=fmt_ms(entry.get("duration_ms")))]
    return "\n".join(lines)
