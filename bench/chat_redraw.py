"""What drawing a streamed chat reply costs the GUI thread, per redraw, as the reply grows.

The real TranscriptView holds a conversation of earlier messages and a reply that grows by a few
characters per redraw (Markdown prose with code blocks, as models write). Two ways are timed side
by side on the same text: the view's own (`redraw_last`: only the pieces from the first changed
paragraph or code box on are replaced) and the baseline it replaced (the whole reply removed and
inserted again as one HTML string, each redraw). A redraw is timed with the layout it causes
(processEvents). Also: opening a conversation (drawing every message at once).

    QT_QPA_PLATFORM=offscreen python bench/chat_redraw.py [--earlier 40] [--step 32] [--json]

With --json: one JSON object on stdout, the table on stderr; bench/results/chat_redraw/ either way.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from laya_desktop.gui.chat.conversation import Message  # noqa: E402
from laya_desktop.gui.chat.transcript_view import TranscriptView  # noqa: E402
from publish import begin, publish  # noqa: E402

PARAGRAPH = ("The slice `xs[::-1]` makes a **reversed copy**; `xs.reverse()` works in place "
             "and returns None, see [the docs](https://docs.python.org/3/). ") * 2 + "\n\n"
CODE = "```python\n" + "def rev(xs):\n    return xs[::-1]\n" * 6 + "```\n\n"
MARKS = (1_000, 4_000, 16_000, 32_000)


class WholeReplyView(TranscriptView):
    """The baseline: every redraw replaces the whole reply with one HTML string."""

    def redraw_last(self) -> None:
        index = len(self._messages) - 1
        cursor = QTextCursor(self.document())
        cursor.setPosition(self._last_starts[0])
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        cursor.insertHtml("".join(self._piece_html(index, p)[0] for p in self.pieces(index)))


def stream(app: QApplication, view: TranscriptView, text: str, step: int, earlier: int) -> dict:
    messages = []
    for _ in range(earlier // 2):
        messages += [Message("user", "How do I reverse a list?"), Message("assistant", PARAGRAPH + CODE)]
    started = time.perf_counter()
    view.show_messages(messages)
    app.processEvents()
    opened_ms = (time.perf_counter() - started) * 1000
    messages.append(Message("assistant", ""))
    view.append_message()
    per_mark, times, pos = {}, [], 0
    for mark in MARKS:
        times = []
        while pos < mark:
            pos += step
            messages[-1].text = text[:pos]
            started = time.perf_counter()
            view.redraw_last()
            app.processEvents()
            times.append((time.perf_counter() - started) * 1000)
        tail = times[-50:]    # the cost at this length, not averaged with the shorter ones
        per_mark[mark] = {"mean_ms": statistics.fmean(tail), "max_ms": max(tail)}
    return {"open_ms": opened_ms, "redraw": per_mark}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--earlier", type=int, default=40, help="messages before the reply")
    parser.add_argument("--step", type=int, default=32, help="characters added per redraw")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    begun = begin()
    app = QApplication.instance() or QApplication([])
    text = (PARAGRAPH * 3 + CODE) * (MARKS[-1] // len(PARAGRAPH * 3 + CODE) + 1)
    results = {}
    for name, cls in (("pieces", TranscriptView), ("whole_reply", WholeReplyView)):
        view = cls()
        view.resize(900, 700)
        view.show()
        results[name] = stream(app, view, text, args.step, args.earlier)
        view.close()
    rows = [f"{'reply chars':>11} | {'pieces ms':>9} | {'whole reply ms':>14} | {'whole / pieces':>14}",
            "-" * 58]
    for mark in MARKS:
        a, b = results["pieces"]["redraw"][mark]["mean_ms"], results["whole_reply"]["redraw"][mark]["mean_ms"]
        rows.append(f"{mark:>11} | {a:>9.2f} | {b:>14.2f} | {b / a:>13.1f}x")
    rows.append(f"opening {args.earlier} messages: {results['pieces']['open_ms']:.0f} ms")
    report = {"benchmark": "chat_redraw", "earlier_messages": args.earlier, "step_chars": args.step,
              "platform": platform.platform(), "cpus": os.cpu_count(),
              "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
              "results": {k: {"open_ms": v["open_ms"],
                              "redraw": {str(m): r for m, r in v["redraw"].items()}}
                          for k, v in results.items()}}
    publish("chat_redraw", report, "\n".join(rows), args.json, started=begun)


if __name__ == "__main__":
    main()
