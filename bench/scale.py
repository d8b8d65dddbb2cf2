#!/usr/bin/env python3
"""scale.py — how sop's cost grows with the work: each command against targets of growing size
(asyncio tasks, threads, child processes, heap objects, merged rank reports), its wall time and
peak RSS, and the least-squares slope of log(cost) over log(size) (1.0: linear; 2.0:
quadratic), over the sizes whose cost is at least the floor (RSS: at least 1 MiB above the
smallest size's). Cost is the time above the command's own floor (`sopctl
version`, measured in the same run) and, for windows, above the window itself. Prints a
Markdown table (docs/performance.md, "Scale"). Needs root (it reads the targets' memory).

  python3 bench/scale.py [--build build] [--quick] [--runs 3] [--json out.json] [--only TEXT]

--quick stops each series one size short of its largest (no 100k tasks, 10M objects, 1,024
ranks). Every target is started and ended here, by pid."""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
PY = "/usr/bin/python3"
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(argv, timeout=600):
    """(wall ms, peak RSS KiB) of argv, output discarded; exits the bench on failure."""
    rss_file = None
    if GNU_TIME:
        fd, rss_file = tempfile.mkstemp(prefix="sop-scale-")
        os.close(fd)
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file, "--"] + argv
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    wall = (time.perf_counter() - t0) * 1e3
    rss = 0
    if rss_file:
        with open(rss_file) as f:
            words = f.read().split()
        os.unlink(rss_file)
        rss = int(words[-1]) if words and words[-1].isdigit() else 0
    if p.returncode not in (0, 1):
        sys.exit("scale: %s exited %d: %s" % (" ".join(argv), p.returncode,
                                             p.stderr.decode(errors="replace")[-400:]))
    return wall, rss


class Target:
    """A Python target; ready when it prints its first line. Ended by its pid (its group)."""

    def __init__(self, argv, timeout=300):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.PIPE, text=True, start_new_session=True)
        t0 = time.time()
        line = self.p.stdout.readline()
        if not line or time.time() - t0 > timeout:
            self.close()
            sys.exit("scale: target did not start: %s" % " ".join(argv))
        self.pid = self.p.pid

    def close(self):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


def median_of(runs, argv):
    walls, rsss = [], []
    for _ in range(runs):
        w, r = run(argv)
        walls.append(w)
        rsss.append(r)
    return statistics.median(walls), max(rsss)


def slope(points, floor):
    """The least-squares slope of log(cost) over log(size), over the sizes whose cost is at
    least the floor (below it the cost is noise around the start-up); NaN with fewer than two."""
    pts = [(math.log(n), math.log(c)) for n, c in points if c >= floor and n > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else float("nan")


def series(name, sizes, start, argv_of, runs, floor_ms, window_ms=0.0):
    rows = []
    for n in sizes:
        t = start(n)
        try:
            wall, rss = median_of(runs, argv_of(t))
        finally:
            t.close()
        cost = max(wall - floor_ms - window_ms, 0.01)
        rows.append({"size": n, "wall_ms": wall, "cost_ms": cost, "rss_kib": rss})
        print("  %-28s %9d  %9.1f ms  %8.1f MiB" % (name, n, wall, rss / 1024), file=sys.stderr,
              flush=True)
    pts = [(r["size"], r["cost_ms"]) for r in rows]
    rpts = [(r["size"], max(r["rss_kib"] - rows[0]["rss_kib"], 1)) for r in rows]
    return {"name": name, "rows": rows, "slope": slope(pts, max(floor_ms, 1.0)),
            "rss_slope": slope(rpts, 1024)}


def merge_inputs(sopctl, n, tmp):
    """n report files of one real report, each a rank of its own."""
    base = os.path.join(tmp, "base.json")
    t = Target([PY, os.path.join(HERE, "targets", "threads_children.py"), "--threads", "4",
                "--children", "0"])
    try:
        with open(base, "w") as f:
            subprocess.run([sopctl, "run", "--pid", str(t.pid), "--duration", "0", "--format",
                            "json"], stdout=f, check=False)
    finally:
        t.close()
    with open(base) as f:
        doc = json.load(f)
    paths = []
    for i in range(n):
        d = dict(doc)
        d["rank"] = i
        p = os.path.join(tmp, "rank-%d.json" % i)
        with open(p, "w") as f:
            json.dump(d, f)
        paths.append(p)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--only", help="the rows whose name holds this text (e.g. 'threads')")
    a = ap.parse_args()
    sopctl = os.path.realpath(os.path.join(a.build, "sopctl"))
    if os.geteuid() != 0:
        sys.exit("scale: needs root")
    cut = (lambda s: s[:-1]) if a.quick else (lambda s: s)
    floor, floor_rss = median_of(max(a.runs, 5), [sopctl, "version"])
    out = []
    want = lambda name: not a.only or a.only in name
    tasks = lambda n: Target([PY, os.path.join(HERE, "targets", "asyncio_tasks.py"), str(n)])
    thr = lambda n: Target([PY, os.path.join(HERE, "targets", "threads_children.py"),
                            "--threads", str(n), "--children", "0"])
    kids = lambda n: Target([PY, os.path.join(HERE, "targets", "threads_children.py"),
                             "--threads", "2", "--children", str(n)])
    heap = lambda n: Target([PY, os.path.join(SRC, "tests", "e2e", "targets", "py_heap_target.py"),
                             str(max(n // 4, 1))], timeout=600)
    run = lambda d: (lambda t: [sopctl, "run", "--pid", str(t.pid), "--duration", d, "--format",
                                "json"])
    table = [
        ("tasks --json (asyncio tasks)", [100, 1000, 10000, 100000], tasks,
         lambda t: [sopctl, "tasks", "--pid", str(t.pid), "--json"], 0),
        ("run --duration 1 (asyncio tasks)", [100, 1000, 10000, 100000], tasks, run("1"), 1000),
        ("dump --json (threads)", [10, 100, 1000, 4096], thr,
         lambda t: [sopctl, "dump", "--pid", str(t.pid), "--json"], 0),
        ("run --duration 0 (threads)", [10, 100, 1000, 4096], thr, run("0"), 0),
        ("run --duration 1 (threads)", [10, 100, 1000, 4096], thr, run("1"), 1000),
        ("run --duration 0 (children)", [1, 8, 64, 512], kids, run("0"), 0),
        ("heap --json (GC objects)", [10000, 100000, 1000000, 10000000], heap,
         lambda t: [sopctl, "heap", "--pid", str(t.pid), "--json"], 0),
    ]
    for name, sizes, start, argv_of, window_ms in table:
        if want(name):
            out.append(series(name, cut(sizes), start, argv_of, a.runs, floor,
                              window_ms=window_ms))
    tmp = tempfile.mkdtemp(prefix="sop-scale-")
    try:
        files = merge_inputs(sopctl, 1024, tmp) if want("merge (rank reports)") else []

        class Files:
            def __init__(self, n):
                self.files = files[:n]

            def close(self):
                pass
        if files:
            out.append(series("merge (rank reports)", cut([2, 16, 128, 1024]), Files,
                              lambda t: [sopctl, "merge"] + t.files, a.runs, floor))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("Scale, %s, %d CPUs, median of %d runs; floor (`sopctl version`) %.1f ms, %.1f MiB" % (
        time.strftime("%Y-%m-%d"), os.cpu_count(), a.runs, floor, floor_rss / 1024))
    print()
    print("| command (what grows) | sizes | wall ms | peak RSS MiB | slope time | slope RSS |")
    print("|---|---|---|---|---|---|")
    for s in out:
        print("| %s | %s | %s | %s | %.2f | %.2f |" % (
            s["name"], " → ".join("%g" % r["size"] for r in s["rows"]),
            " → ".join("%.0f" % r["wall_ms"] for r in s["rows"]),
            " → ".join("%.0f" % (r["rss_kib"] / 1024) for r in s["rows"]), s["slope"],
            s["rss_slope"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"floor_ms": floor, "series": out}, f, indent=1)
    worst = max((s["slope"] for s in out if not math.isnan(s["slope"])), default=0)
    print("\nlargest time slope %.2f (1.0 is linear)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
