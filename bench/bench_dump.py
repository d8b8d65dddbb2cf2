#!/usr/bin/env python3
# bench_dump.py — `sopctl dump` speed and target pause on a CPython 3.11 process with 32
# threads x 50 frames, next to gdb's py-bt (python3.11-dbg) on the same target, in one run.
# Usage: python3 bench/bench_dump.py [BUILD_DIR]   (needs root, gdb, python3.11-dbg)
# Pause is measured, not assumed: a poller samples /proc/PID/task/*/stat for 't'/'T' states
# while each tool runs; --native also reports each thread's own stop time.
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
SOPCTL = os.path.join(BUILD, "sopctl")
LIBSOP = os.path.join(BUILD, "libsop.so")
PY = "/usr/bin/python3.11"
NTHREADS, DEPTH = 32, 50


class StopPoller:
    """Samples the target's thread states; stopped_ms ~ time during which any thread was in a
    stop state, at the sampling resolution."""

    def __init__(self, pid):
        self.pid, self.samples, self.stopped, self.run = pid, 0, 0, True
        self.t = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        tasks = ["/proc/%d/task/%s/stat" % (self.pid, t) for t in os.listdir("/proc/%d/task" % self.pid)]
        self.t0 = time.monotonic()
        while self.run:
            any_stopped = False
            for p in tasks:
                try:
                    with open(p) as f:
                        if f.read().rsplit(")", 1)[1].split()[0] in "tT":
                            any_stopped = True
                            break
                except OSError:
                    pass
            self.samples += 1
            self.stopped += any_stopped
            time.sleep(0.0005)  # sample, do not starve the tools being measured
        self.t1 = time.monotonic()

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.run = False
        self.t.join()

    def stopped_ms(self):
        if not self.samples:
            return float("nan")
        return (self.t1 - self.t0) * 1e3 * self.stopped / self.samples


def child_cpu_ms():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1e3


def timed(argv, n, cpu=None):
    """Wall ms of each run; CPU ms of each run appended to `cpu` when given."""
    ms = []
    out = None
    for _ in range(n):
        c0 = child_cpu_ms()
        t0 = time.perf_counter()
        r = subprocess.run(argv, capture_output=True, text=True)
        ms.append((time.perf_counter() - t0) * 1e3)
        if cpu is not None:
            cpu.append(child_cpu_ms() - c0)
        out = r
    return ms, out


def main():
    tgt = subprocess.Popen([PY, os.path.join(HERE, "py_bench_target.py"), str(NTHREADS), str(DEPTH)],
                           stdout=subprocess.PIPE, text=True)
    assert tgt.stdout.readline().strip() == "ready"
    pid = tgt.pid
    try:
        doc = json.loads(subprocess.run([SOPCTL, "dump", "--json", "--pid", str(pid)],
                                        capture_output=True, text=True, check=True).stdout)
        workers = [t for t in doc["threads"] if t.get("tid") != pid]
        depths = sorted(len(t["frames"]) for t in workers)
        print("target: pid %d, Python %s, %d threads (+main), frames per thread %d..%d" %
              (pid, doc["python"]["version"], len(workers), depths[0], depths[-1]))

        # 1. the library call, in process (what an embedding agent pays)
        lib = ctypes.CDLL(LIBSOP)
        lib.sop_dump.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_void_p)]
        out = ctypes.c_void_p()
        lib_ms, lib_cpu = [], []
        with StopPoller(pid) as poll_lib:
            for _ in range(200):
                c0 = time.thread_time()
                t0 = time.perf_counter()
                rc = lib.sop_dump(None, pid, 0, 1, ctypes.byref(out))
                lib_ms.append((time.perf_counter() - t0) * 1e3)
                lib_cpu.append((time.thread_time() - c0) * 1e3)
                lib.sop_free(out)
                assert rc == 0
        # 2. the CLI, end to end (process start included)
        with StopPoller(pid) as poll_cli:
            cli_cpu = []
            cli_ms, _ = timed([SOPCTL, "dump", "--json", "--pid", str(pid)], 30, cli_cpu)
        # 3. --native
        with StopPoller(pid) as poll_nat:
            nat_ms, r = timed([SOPCTL, "dump", "--json", "--native", "--pid", str(pid)], 10)
        pauses = [t.get("pause_ms", float("nan")) for t in json.loads(r.stdout)["threads"]]
        # 4. gdb + python3.11-dbg's py-bt, every thread (the same information)
        gdb_argv = ["gdb", "-batch", "-nx", "-p", str(pid), "-ex", "thread apply all py-bt"]
        gdb_argv[3:3] = ["-iex", "add-auto-load-safe-path /usr/share/gdb/auto-load"]
        with StopPoller(pid) as poll_gdb:
            gdb_cpu = []
            gdb_ms, g = timed(gdb_argv, 3, gdb_cpu)
        gdb_frames = g.stdout.count("  File \"")
        gdb_one_ms, _ = timed(["gdb", "-batch", "-nx", "-p", str(pid), "-ex", "py-bt"], 1)
    finally:
        tgt.kill()
        tgt.wait()

    med = statistics.median
    sop_frames = sum(len(t["frames"]) for t in doc["threads"])
    print("frames: sopctl %d, gdb py-bt %d" % (sop_frames, gdb_frames))
    print("load average at the end: %s (2 cores; wall times suffer from other load, CPU less)" %
          open("/proc/loadavg").read().split()[:3])
    print("%-36s %10s %10s %14s" % ("", "ms/dump", "CPU ms", "target stopped"))
    print("%-36s %10.3f %10.3f %11.1f ms  (median; p90 wall %.3f, n=200)" % (
        "libsop sop_dump (in process)", med(lib_ms), med(lib_cpu), poll_lib.stopped_ms(),
        sorted(lib_ms)[179]))
    print("%-36s %10.3f %10.3f %11.1f ms  (n=30, process start included)" % (
        "sopctl dump --json", med(cli_ms), med(cli_cpu), poll_cli.stopped_ms()))
    print("%-36s %10.3f %10s %11.1f ms  (n=10, per run; per-thread pause median %.3f, max %.3f ms)" % (
        "sopctl dump --json --native", med(nat_ms), "", poll_nat.stopped_ms() / 10,
        med(pauses), max(pauses)))
    print("%-36s %10.1f %10.1f %11.1f ms  (n=3, per run)" % ("gdb thread apply all py-bt",
          med(gdb_ms), med(gdb_cpu), poll_gdb.stopped_ms() / 3))
    print("%-36s %10.1f" % ("gdb py-bt (one thread)", gdb_one_ms[0]))
    print("ratio gdb/libsop: %.0fx   gdb/sopctl: %.0fx   gdb/sopctl --native: %.0fx" % (
        med(gdb_ms) / med(lib_ms), med(gdb_ms) / med(cli_ms), med(gdb_ms) / med(nat_ms)))
    print("ratio gdb/libsop CPU: %.0fx   gdb/sopctl CPU: %.0fx" % (
        med(gdb_cpu) / med(lib_cpu), med(gdb_cpu) / med(cli_cpu)))
    print("aim < 5 ms non-blocking (libsop): wall median %.2f ms -> %s, CPU median %.2f ms -> %s;"
          " target stopped %s" % (med(lib_ms), "met" if med(lib_ms) < 5 else "NOT met",
                                  med(lib_cpu), "met" if med(lib_cpu) < 5 else "NOT met",
                                  "never" if poll_lib.stopped == 0 else "SOMETIMES"))
    print("aim >= 100x faster than gdb (sopctl, process start included): %.0fx wall -> %s" % (
        med(gdb_ms) / med(cli_ms), "met" if med(gdb_ms) / med(cli_ms) >= 100 else "NOT met"))


if __name__ == "__main__":
    main()
