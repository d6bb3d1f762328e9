"""llama.cpp's own server tests (tests/llama_cpp_server/unit, vendored) run twice on the same
stand-in models: against `laya serve` and against the real llama-server that bench/llama_server.py
builds from the same llama.cpp release. The baseline is llama-server's count; what matters is the
list of tests llama-server passes and Laya does not.

Both runs leave out the same tests (tests/llama_cpp_server/not_run.py: hub models, endpoints only
llama-server has, vision) and ignore Laya's expected-failure list (--runxfail), so each outcome is
the test's own. Takes about ten minutes on two cores (each test starts a server and a model).

    .venv/bin/python bench/llama_cpp_suite.py [--files test_chat_completion.py ...] [--json]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_server import ensure_llama_server  # noqa: E402
from publish import begin, publish  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "tests" / "llama_cpp_server" / "unit"
FILES = ["test_chat_completion.py", "test_completion.py", "test_compat_anthropic.py",
         "test_compat_oai_responses.py", "test_embedding.py", "test_tool_call.py", "test_security.py"]


def outcomes(target: str, files: list[str], binary: Path) -> dict[str, str]:
    """nodeid -> passed | failed | skipped, from pytest's JUnit XML."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "LAYA_SUITE_SERVER": target, "LLAMA_SERVER_BIN_PATH": str(binary),
               "HF_HUB_OFFLINE": "1", "QT_QPA_PLATFORM": "offscreen"}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "slow", "--runxfail",
                        "-p", "no:randomly", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *[str(SUITE / f) for f in files]], cwd=REPO, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            nodeid = f"{case.get('classname')}::{case.get('name')}"
            if case.find("skipped") is not None:
                found[nodeid] = "skipped"
            elif case.find("failure") is not None or case.find("error") is not None:
                found[nodeid] = "failed"
            else:
                found[nodeid] = "passed"
        return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="*", default=FILES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = begin()
    binary = ensure_llama_server(log=lambda *a: print(*a, file=sys.stderr))
    runs = {target: outcomes(target, args.files, binary) for target in ("llama-server", "laya")}
    llama, laya = runs["llama-server"], runs["laya"]
    only_llama = sorted(t for t, o in llama.items() if o == "passed" and laya.get(t) != "passed")
    only_laya = sorted(t for t, o in laya.items() if o == "passed" and llama.get(t) != "passed")
    by_file = {}
    for f in args.files:
        stem = f[:-3]
        by_file[stem] = {target: {o: sum(1 for t, v in runs[target].items() if stem in t and v == o)
                                  for o in ("passed", "failed", "skipped")} for target in runs}
    lines = [f"{'file':<30} {'llama-server':>14} {'laya':>14}   (passed / failed; skipped alike)"]
    for stem, counts in by_file.items():
        cell = {t: f"{c['passed']} / {c['failed']}" for t, c in counts.items()}
        lines.append(f"{stem:<30} {cell['llama-server']:>14} {cell['laya']:>14}")
    total = {t: sum(1 for o in runs[t].values() if o == "passed") for t in runs}
    lines.append(f"{'passed in all':<30} {total['llama-server']:>14} {total['laya']:>14}")
    lines.append(f"llama-server passes, Laya does not ({len(only_llama)}):")
    lines += [f"  {t}" for t in only_llama]
    lines.append(f"Laya passes, llama-server does not: {len(only_laya)}")
    report = {"files": args.files, "llama_server": str(binary), "passed": total, "by_file": by_file,
              "llama_server_only": only_llama, "laya_only": only_laya, "outcomes": runs}
    publish("llama_cpp_suite", report, "\n".join(lines), args.json, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
