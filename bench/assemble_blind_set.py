"""Joins the blind writers' files into one labelled prompt set for bench/semantic_route.py.

    python bench/assemble_blind_set.py NAME OUT WRITER.jsonl...

Each row gets an id and `split: NAME`. A prompt is dropped when its last user message, normalised
(lower case, letters, digits and single spaces), equals that of a prompt of another set in
bench/data, of an earlier row of this one, or an example or negative of the routes file: the
bench must not score a text it was fitted on or has scored already. Prints what it kept and
dropped; reads no score.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent / "data"


def normalised(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def last_user_text(row: dict) -> str:
    return [m["content"] for m in row["messages"] if m["role"] == "user"][-1]


def main() -> int:
    name, out, writers = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    seen: set[str] = set()
    for path in sorted(DATA.glob("semantic_*.jsonl")):
        if path.resolve() != out.resolve():
            seen |= {normalised(last_user_text(json.loads(line))) for line in path.open(encoding="utf-8")}
    written = yaml.safe_load((DATA / "semantic_routes.yaml").read_text(encoding="utf-8"))
    seen |= {normalised(t) for texts in written["routes"].values() for t in texts}
    seen |= {normalised(t) for t in written["negatives"]}
    kept, dropped = [], Counter()
    for path in writers:
        for line in Path(path).open(encoding="utf-8"):
            row = json.loads(line)
            key = normalised(last_user_text(row))
            if key in seen:
                dropped[row["route"]] += 1
                continue
            seen.add(key)
            kept.append({"id": len(kept), "route": row["route"], "split": name, "kind": row["kind"],
                         "messages": row["messages"]})
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    print(f"{out}: {len(kept)} prompts kept, {sum(dropped.values())} dropped "
          f"({dict(dropped)}); by route {dict(Counter(r['route'] for r in kept))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
