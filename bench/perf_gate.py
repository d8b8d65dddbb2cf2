#!/usr/bin/env python3
# perf_gate.py — the performance gate (issue 27): this build's sopctl against a baseline sopctl
# built from a git ref, measured side by side in one run on the same targets,
# A and B interleaved run by run, so that load from elsewhere on the machine hits both alike;
# the verdict is on ratios (current / baseline), never on absolute times.
#
#   python3 bench/perf_gate.py [--quick] [--build DIR] [--baseline REF | --baseline-bin SOPCTL]
#                              [--runs N] [--slow-runs N] [--margin 1.5] [--json FILE]
#
# The baseline by default ("auto"): the newest tag when there is one, else where HEAD left main
# (git merge-base HEAD main) when HEAD is not main itself, else HEAD~1 (CI on main: the commit
# before the one being tested). `make perf-gate` runs the quick part; .ci/run runs that after
# the tests.
#
# Measures (median over --runs, wall time of the whole command; CPU = user+sys from wait4):
#   startup    sopctl version
#   dump       sopctl dump --json, CPython 3.11 target with 32 threads x 50 frames
#   snapshot   sopctl evidence --duration 0, target with 64 threads + 8 forked children
#   run0       sopctl run --duration 0 --format json, the same target
#   (full mode, without --quick, also:)
#   window1s   sopctl run --duration 1: peak RSS (the figure) and CPU
#   sampler    sopctl record --rate 100 for 2 s on a busy target: sopctl's CPU
#   heap       sopctl heap --json on a target holding ~1M GC-tracked objects
#   watch      sopctl watch --every 1 --duration 0.5 --count 3 (three 0.5 s windows): CPU
# Exit status: 0 no regression, 1 a measure is slower than margin x baseline (and by more than
# --floor-ms, so sub-millisecond jitter does not fail it), 2 setup error.
# The baseline build is cached in $SOP_BENCH_CACHE (default /var/tmp/sop-perf-baseline/<sha>).
# Needs root (ptrace of the targets), cmake and a C compiler for the baseline.
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.realpath(os.path.join(HERE, ".."))
PY = "/usr/bin/python3"


def die(msg):
    print("perf_gate: " + msg, file=sys.stderr)
    sys.exit(2)


def git(*args):
    return subprocess.run(["git", "-C", SRC] + list(args), check=True, capture_output=True,
                          text=True).stdout.strip()


def auto_baseline():
    """The newest tag; else the merge-base with main when HEAD is elsewhere; else HEAD~1."""
    try:
        return git("describe", "--tags", "--abbrev=0")
    except subprocess.CalledProcessError:
        pass
    try:
        head = git("rev-parse", "HEAD")
        base = git("merge-base", "HEAD", "main")
        if base != head:
            return base
    except subprocess.CalledProcessError:
        pass
    return "HEAD~1"


def build_baseline(ref):
    """sopctl built from `ref` (git archive into a temp dir, cmake, only the sopctl target)."""
    try:
        sha = git("rev-parse", "--verify", ref + "^{commit}")
    except subprocess.CalledProcessError:
        die("no such git ref: %s" % ref)
    cache = os.path.join(os.environ.get("SOP_BENCH_CACHE", "/var/tmp/sop-perf-baseline"), sha)
    exe = os.path.join(cache, "build", "sopctl")
    if os.path.exists(exe):
        return exe, sha
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="sop-perf-", dir=os.path.dirname(cache))
    print("building the baseline sopctl from %s (%s) in %s ..." % (ref, sha[:10], tmp),
          file=sys.stderr, flush=True)
    src = os.path.join(tmp, "src")
    os.makedirs(src)
    arch = subprocess.Popen(["git", "-C", SRC, "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", src], stdin=arch.stdout, check=True)
    if arch.wait() != 0:
        die("git archive %s failed" % sha)
    bdir = os.path.join(tmp, "build")
    for cmd in (["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                 "-DSOP_TESTS=OFF"],
                ["cmake", "--build", bdir, "-j2", "--target", "sopctl"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            die("baseline build failed: %s\n%s" % (" ".join(cmd), (r.stdout + r.stderr)[-3000:]))
    if os.path.exists(cache):  # another run got there first
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        shutil.rmtree(src, ignore_errors=True)
        os.rename(tmp, cache)
    return exe, sha


# GNU time, when installed, for peak RSS: a child of this Python process reports at least the
# RSS of the Python it was forked from in its ru_maxrss (the kernel keeps the old memory's high
# water mark across exec), ~16 MB, which would hide any sopctl peak below that.
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def timed(argv, timeout=60, rss=False):
    """Run argv (stdout/stderr to /dev/null): (wall ms, cpu ms, peak RSS KiB, exit status,
    page faults: minor + major, of the command and what it waited for).
    rss: measure the peak RSS through GNU time where it is installed (see GNU_TIME)."""
    rss_file = None
    if rss and GNU_TIME:
        fd, rss_file = tempfile.mkstemp(prefix="sop-perf-rss-")
        os.close(fd)
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file, "--"] + list(argv)
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=null, stderr=null, stdin=subprocess.DEVNULL)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = (time.perf_counter() - t0) * 1e3
        killer.cancel()
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9:
        die("timed out after %d s: %s" % (timeout, " ".join(argv)))
    p.returncode = os.waitstatus_to_exitcode(status)
    maxrss = ru.ru_maxrss
    if rss_file:
        with open(rss_file) as f:
            lines = f.read().split()  # "Command exited with non-zero status N" comes first
        os.unlink(rss_file)
        if lines and lines[-1].isdigit():
            maxrss = int(lines[-1])
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3, maxrss, p.returncode, ru.ru_minflt + ru.ru_majflt


class Target:
    """A benchmark target started with argv; ready when it prints its first line."""

    def __init__(self, argv, stdin=False):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  text=True, start_new_session=True)
        line = self.p.stdout.readline()
        if not line:
            die("target did not start: %s" % " ".join(argv))
        self.pid = self.p.pid

    def close(self):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


def measure(name, exes, argv_of, runs, accept=(0, 1), field="wall", warm=1):
    """Run each sopctl in exes, interleaved (A B A B ..., the order flipped every round)."""
    res = {k: {"wall": [], "cpu": [], "rss": [], "faults": []} for k in exes}
    for i in range(warm + runs):
        order = list(exes) if i % 2 == 0 else list(reversed(exes))
        for k in order:
            wall, cpu, rss, rc, faults = timed(argv_of(exes[k]), rss=field == "rss")
            if rc not in accept:
                die("%s: %s exited %d" % (name, " ".join(argv_of(exes[k])), rc))
            if i >= warm:
                res[k]["wall"].append(wall)
                res[k]["cpu"].append(cpu)
                res[k]["rss"].append(rss)
                res[k]["faults"].append(faults)
    out = {"name": name, "field": field}
    for k in exes:
        out[k] = {f: statistics.median(v) for f, v in res[k].items()}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--baseline", default="auto", help="git ref to build the baseline from")
    ap.add_argument("--baseline-bin", help="an already built baseline sopctl")
    ap.add_argument("--quick", action="store_true", help="startup, dump, snapshot, run0 only")
    ap.add_argument("--runs", type=int, default=0, help="runs per measure (default 15, full 21)")
    ap.add_argument("--slow-runs", type=int, default=0,
                    help="runs of the slow measures: window, sampler, watch, heap (runs / 4)")
    ap.add_argument("--margin", type=float, default=1.5)
    ap.add_argument("--floor-ms", type=float, default=1.0)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    runs = a.runs or (15 if a.quick else 21)
    cur = os.path.realpath(os.path.join(a.build, "sopctl"))
    if not os.access(cur, os.X_OK):
        die("no sopctl in %s (build first)" % a.build)
    if os.geteuid() != 0:
        die("needs root (sopctl reads the targets' memory)")
    if a.baseline_bin:
        base, base_name = os.path.realpath(a.baseline_bin), a.baseline_bin
    else:
        if a.baseline == "auto":
            a.baseline = auto_baseline()
        base, sha = build_baseline(a.baseline)
        base_name = "%s (%s)" % (a.baseline, sha[:10])
    exes = {"current": cur, "baseline": base}
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]

    results = []
    targets = []
    # A bare Python start on this machine, measured in the same run: the yardstick the goals are
    # stated against (docs/performance.md), so that they mean the same on a slow machine.
    pyref = measure("python -c pass", {"python": PY}, lambda e: [e, "-c", "pass"], runs)
    try:
        results.append(measure("startup", exes, lambda e: [e, "version"], runs))
        t = Target([PY, os.path.join(HERE, "py_bench_target.py"), "32", "50"])
        targets.append(t)
        results.append(measure("dump", exes, lambda e: [e, "dump", "--pid", str(t.pid), "--json"],
                               runs))
        c = Target([PY, os.path.join(HERE, "targets", "threads_children.py"), "--threads", "64",
                    "--children", "8", "--seconds", "600"])
        targets.append(c)
        results.append(measure("snapshot", exes, lambda e: [e, "evidence", "--pid", str(c.pid),
                                                             "--duration", "0", "-o", os.devnull],
                               runs))
        results.append(measure("run0", exes, lambda e: [e, "run", "--pid", str(c.pid),
                                                         "--duration", "0", "--format", "json"],
                               runs))
        k = Target([PY, os.path.join(HERE, "targets", "asyncio_tasks.py"), "10000"])
        targets.append(k)
        results.append(measure("tasks10k", exes, lambda e: [e, "tasks", "--pid", str(k.pid),
                                                             "--json"], runs))
        k.close()
        if not a.quick:
            slow = a.slow_runs or max(3, runs // 4)
            results.append(measure("window1s", exes, lambda e: [e, "run", "--pid", str(c.pid),
                                                                 "--duration", "1", "--format",
                                                                 "json"], slow, field="rss"))
            t.close()
            busy = Target([PY, "-c", "import sys\nprint('ready', flush=True)\n"
                           "def f(n):\n    return f(n-1) if n else sum(range(1000))\n"
                           "while True: f(30)\n"])
            targets.append(busy)
            out = os.path.join(tempfile.gettempdir(), "sop-perf-gate-%d.txt" % os.getpid())
            results.append(measure("sampler", exes, lambda e: [e, "record", "--pid", str(busy.pid),
                                                                "--duration", "2", "--rate", "100",
                                                                "-o", out], slow, field="cpu"))
            os.unlink(out)
            results.append(measure("watch", exes, lambda e: [e, "watch", "--pid", str(busy.pid),
                                                              "--every", "1", "--duration", "0.5",
                                                              "--count", "3"], slow,
                                   field="cpu"))
            busy.close()
            c.close()
            h = Target([PY, os.path.join(SRC, "tests", "e2e", "targets", "py_heap_target.py"),
                        "420000"], stdin=True)
            targets.append(h)
            results.append(measure("heap", exes, lambda e: [e, "heap", "--pid", str(h.pid),
                                                             "--json"], slow))
    finally:
        for t in targets:
            t.close()
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[:3]

    print("perf gate: current %s vs baseline %s, median of %d runs (slow measures fewer), "
          "load %s -> %s, margin %.2fx" % (cur, base_name, runs, "/".join(load0), "/".join(load1),
                                           a.margin))
    py_ms = pyref["python"]["wall"]
    print("bare python start (%s -c pass): %.2f ms, %d page faults" % (PY, py_ms,
                                                                     pyref["python"]["faults"]))
    print("%-9s %-5s %10s %10s %7s   %-15s %-15s %s" % ("measure", "on", "current", "baseline",
                                                       "ratio", "cpu ms cur/base",
                                                       "faults cur/base", "x python start"))
    failed = []
    for r in results:
        f = r["field"]
        cv, bv = r["current"][f], r["baseline"][f]
        ratio = cv / bv if bv > 0 else float("inf")
        unit = "KiB" if f == "rss" else "ms"
        bad = ratio > a.margin and (f == "rss" or cv - bv > a.floor_ms)
        r["ratio"] = ratio
        r["regressed"] = bad
        if bad:
            failed.append(r["name"])
        xpy = "%.2fx" % (r["current"]["wall"] / py_ms) if py_ms > 0 and f == "wall" else "-"
        print("%-9s %-5s %7.2f %-3s %6.2f %-3s %6.2fx%s  %6.2f/%-8.2f %6d/%-8d %s" % (
            r["name"], f, cv, unit, bv, unit, ratio, " REGRESSED" if bad else "",
            r["current"]["cpu"], r["baseline"]["cpu"], r["current"]["faults"],
            r["baseline"]["faults"], xpy))
    if a.json:
        with open(a.json, "w") as fp:
            json.dump({"baseline": base_name, "runs": runs, "load": [load0, load1],
                       "python_start": pyref["python"],
                       "margin": a.margin, "results": results}, fp, indent=1)
    if failed:
        print("perf gate: FAILED, slower than %.2fx the baseline: %s" % (a.margin,
                                                                        ", ".join(failed)))
        return 1
    print("perf gate: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
