"""Writes bench/data/user_sets/*.jsonl: test prompts for the route sets of
bench/data/user_routes.yaml, from text written and labelled by others (Debian package
descriptions by archive section, man page NAME lines by manual section).

    .venv/bin/python bench/data/make_user_sets.py   # needs `apt-get update` (Debian) and man pages

Each row: {"text", "label" (a route name, or "none"), "source_label" (the section), "hard"
(a "none" row from a section near one of the routes), "source" (the package or man page)}.
The choice is blind to the text: per route PER_ROUTE rows drawn at random (seed 0) from its
section, per set NONE_HARD rows from the hard-negative sections and NONE_OTHER from the other
sections named in the routes file. Dropped before drawing, by rule and not by reading: Debian
transitional/dummy packages, debug symbols and duplicate descriptions; man pages of another
subsection (3pm, 3ssl, 1ssl ...).
"""
from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE / "user_sets"
PER_ROUTE, NONE_HARD, NONE_OTHER = 50, 60, 60
MAN = Path("/usr/share/man")
SKIP = re.compile(r"transitional|dummy package|debug symbols|debugging symbols|metapackage", re.I)


def debian_rows() -> dict[str, list[dict]]:
    """section -> [{text, source}]: each package's short description (its one-line summary; the
    long descriptions are left out: the text kept is a line per package, under its package's
    licence)."""
    dump = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, check=True).stdout
    by_section: dict[str, list[dict]] = {}
    seen = set()
    for stanza in dump.split("\n\n"):
        fields, desc, in_desc = {}, [], False
        for line in stanza.splitlines():
            if in_desc and line.startswith(" "):
                desc.append(line.strip())
                continue
            in_desc = False
            key, _, value = line.partition(":")
            fields[key] = value.strip()
            if key == "Description":
                in_desc = True
        short = fields.get("Description", "")
        name, section = fields.get("Package", ""), fields.get("Section", "").split("/")[-1]
        if not short or SKIP.search(short + " " + " ".join(desc)) or name.endswith(("-dbg", "-dbgsym")):
            continue
        if short.lower() in seen:
            continue
        seen.add(short.lower())
        by_section.setdefault(section, []).append({"text": short, "source": name})
    return by_section


NAME_LINE = re.compile(r"^\.SH\s+\"?NAME\"?\s*$", re.I)


def man_rows() -> dict[str, list[dict]]:
    """section -> [{text, source}]: the summary after "name \\-" in each page's NAME section."""
    by_section: dict[str, list[dict]] = {}
    seen = set()
    for n in "12345678":
        for page in sorted((MAN / f"man{n}").glob(f"*.{n}.gz")):
            try:
                lines = gzip.open(page, "rt", errors="replace").read().splitlines()
            except OSError:
                continue
            summary = None
            for i, line in enumerate(lines):
                if NAME_LINE.match(line):
                    for nxt in lines[i + 1:i + 6]:
                        if "\\-" in nxt:
                            summary = nxt.split("\\-", 1)[1]
                            break
                    break
            if not summary:
                continue
            summary = re.sub(r"\\f[BIRP]|\\[&|^]|\\\(..|\\", "", summary).strip()
            if len(summary.split()) < 2 or summary.lower() in seen:
                continue
            seen.add(summary.lower())
            by_section.setdefault(n, []).append({"text": summary, "source": page.name})
    return by_section


def draw(rng: random.Random, rows: list[dict], k: int) -> list[dict]:
    return rng.sample(rows, min(k, len(rows)))


def write_set(name: str, spec: dict, pool: dict[str, list[dict]]) -> int:
    rng = random.Random(0)
    label_of = {route: route for route in spec["routes"]}
    if spec["family"] == "man":
        label_of = {route: route_section for route, route_section in
                    zip(spec["routes"], spec["sections"])}
    out = []
    for route, section in label_of.items():
        out += [{**r, "label": route, "source_label": section, "hard": False}
                for r in draw(rng, pool.get(section, []), PER_ROUTE)]
    hard = spec["hard_negative_sections"]
    other = [s for s in spec["none_sections"] if s not in hard]
    hard_pool = [dict(r, source_label=s) for s in hard for r in pool.get(s, [])]
    other_pool = [dict(r, source_label=s) for s in other for r in pool.get(s, [])]
    out += [{**r, "label": "none", "hard": True} for r in draw(rng, hard_pool, NONE_HARD)]
    out += [{**r, "label": "none", "hard": False} for r in draw(rng, other_pool, NONE_OTHER)]
    with open(OUT / f"{name}.jsonl", "w") as f:
        for r in out:
            f.write(json.dumps({k: r[k] for k in ("text", "label", "source_label", "hard", "source")}) + "\n")
    return len(out)


def main() -> None:
    spec = yaml.safe_load(open(HERE / "user_routes.yaml"))["sets"]
    OUT.mkdir(exist_ok=True)
    pools = {"debian": debian_rows(), "man": man_rows()}
    for name, s in spec.items():
        print(name, write_set(name, s, pools[s["family"]]), "rows")


if __name__ == "__main__":
    main()
