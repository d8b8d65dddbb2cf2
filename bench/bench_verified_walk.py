#!/usr/bin/env python3
# bench_verified_walk.py — completeness of `sopctl dump` on a deeply recursive target that keeps
# calling and returning (issue 12): per interpreter, N dumps, counted as
#   complete  the main thread is marked complete and its outermost frame is <module>
#   partial   the main thread is marked partial (a reason is given)
#   wrong     marked complete but cut short (outermost frame not <module>) or foreign frames
# plus the sampler's partial rate (`sopctl record`'s samples_partial) over a short window.
# Usage: python3 bench/bench_verified_walk.py [--dumps N] [--sopctl PATH] [--depth D]
#        [--only 3.8] [--extra=--exact]   (with --exact: how many dumps stopped, and the pause)
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = r"""
import sys
def recurse(n):
    if n == 0:
        return
    recurse(n - 1)
print("ready", flush=True)
while True:
    recurse(int(sys.argv[1]))
"""


def interpreters():
    out = []
    for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")):
        v = p.split("/")[4]
        if tuple(int(x) for x in v.split(".")[:2]) >= (3, 8):
            out.append((v, p))
    if os.path.exists("/usr/bin/python3"):
        out.append(("system", "/usr/bin/python3"))
    return out


def classify(doc):
    """complete / partial / wrong / none for the main thread of one dump."""
    threads = doc.get("threads") or []
    main = [t for t in threads if t.get("name") == "MainThread"] or threads[:1]
    if not main:
        return "none"
    t = main[0]
    fr = t.get("frames") or []
    torn = any("frames so far kept" in (m.get("reason") or "")
               for m in doc.get("missing_evidence") or [])  # how sop before issue 12 said it
    if not t.get("complete", True) or t.get("partial") or torn:
        return "partial"
    if not fr or fr[-1].get("func") != "<module>":
        return "wrong"
    if any(f.get("func") not in ("recurse", "<module>") for f in fr):
        return "wrong"
    return "complete"


def run(py, sopctl, dumps, depth, extra):
    p = subprocess.Popen([py, "-c", TARGET, str(depth)], stdout=subprocess.PIPE)
    try:
        p.stdout.readline()
        counts = {"complete": 0, "partial": 0, "wrong": 0, "none": 0}
        retries = 0
        pauses = []
        for _ in range(dumps):
            r = subprocess.run([sopctl, "dump", "--pid", str(p.pid), "--json"] + extra,
                               capture_output=True, text=True, timeout=60)
            try:
                doc = json.loads(r.stdout)
            except ValueError:
                counts["none"] += 1
                continue
            counts[classify(doc)] += 1
            retries += (doc.get("walk") or {}).get("retries", 0)
            if (doc.get("walk") or {}).get("threads_stopped"):
                pauses.append(doc["walk"].get("pause_ms", 0))
        return counts, retries, pauses
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dumps", type=int, default=100)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--sopctl", default=os.path.join(HERE, "..", "build", "sopctl"))
    ap.add_argument("--only", default="")
    ap.add_argument("--extra", default="")
    a = ap.parse_args()
    extra = a.extra.split() if a.extra else []
    for v, py in interpreters():
        if a.only and not v.startswith(a.only):
            continue
        t0 = time.monotonic()
        c, retries, pauses = run(py, a.sopctl, a.dumps, a.depth, extra)
        stops = ""
        if pauses:
            pauses.sort()
            stops = (f"  stopped in {len(pauses)} dumps, pause median {pauses[len(pauses) // 2]:.3f}"
                     f" max {pauses[-1]:.3f} ms")
        print(f"{v:8s} complete {c['complete']:3d} partial {c['partial']:3d} wrong {c['wrong']:3d}"
              f" unreadable {c['none']:3d} / {a.dumps}  re-reads {retries}{stops}"
              f"  ({time.monotonic() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
