"""Writes the background "none" corpus shipped with the app: laya_desktop/routing/
semantic_background.txt (one text a line) and semantic_background.npy (their MiniLM vectors,
int8), from WordNet 3.0 (Debian package wordnet-base; WordNet 3.0 licence, Princeton
University: use, copy, modify and distribute with its copyright notice, kept in the .txt's
first lines).

    apt-get install wordnet-base && .venv/bin/python bench/data/make_background.py

What it is: glosses and usage examples of noun and verb synsets, drawn evenly over WordNet's
lexicographer files (its 41 topic groups: artifact, act, food, communication, motion, ...),
seed 0. Text about everything, written by lexicographers, not for any route: what a route's
examples should score above.
"""
from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

WORDNET = Path("/usr/share/wordnet")
ROOT = Path(__file__).resolve().parents[2]
TXT = ROOT / "laya_desktop" / "routing" / "semantic_background.txt"
NPY = TXT.with_suffix(".npy")
SIZE = 1600
NOTICE = ["# WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.",
          "# Glosses and usage examples drawn by bench/data/make_background.py; licence: WordNet 3.0",
          "# (use, copy, modify and distribute with this notice; provided AS IS, no warranty)."]


def synset_texts() -> dict[str, list[str]]:
    by_file: dict[str, list[str]] = defaultdict(list)
    for pos in ("noun", "verb"):
        for line in open(WORDNET / f"data.{pos}", encoding="utf-8", errors="replace"):
            if line.startswith(" ") or "|" not in line:
                continue
            lexfile = f"{pos}.{line.split()[1]}"
            gloss = line.split("|", 1)[1].strip()
            parts = [p.strip() for p in gloss.split(";")]
            definition = parts[0]
            examples = [p.strip('"') for p in parts[1:] if p.startswith('"')]
            for text in [definition, *examples]:
                text = re.sub(r"\s+", " ", text).strip()
                if len(text.split()) >= 4:
                    by_file[lexfile].append(text)
    return by_file


def main() -> None:
    from laya_desktop.routing.minilm import MiniLM
    from laya_desktop.routing.minilm_files import model_files

    rng = random.Random(0)
    by_file = synset_texts()
    per_file = SIZE // len(by_file) + 1
    texts = sorted({t for f in sorted(by_file) for t in rng.sample(by_file[f], min(per_file, len(by_file[f])))})
    texts = rng.sample(texts, min(SIZE, len(texts)))
    encoder = MiniLM(model_files())  # numpy fp32: the reference the other encoders are checked against
    vectors = np.stack([encoder.encode(t.lower()) for t in texts])
    TXT.write_text("\n".join(NOTICE + texts) + "\n", encoding="utf-8")
    np.save(NPY, np.round(vectors * 127).astype(np.int8))
    print(len(texts), "texts,", TXT.stat().st_size + NPY.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
