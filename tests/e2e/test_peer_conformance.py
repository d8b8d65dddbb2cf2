#!/usr/bin/env python3
"""test_peer_conformance.py — sop put in the situations the established stack readers' live-dump
tests exercise (py-spy tests/scripts, pystack tests/integration, austin functional tests: a
recursion that keeps calling and returning, threads named in Unicode and Cyrillic, a thread
named only by the kernel, an OS thread started from C, idle vs active, GC state), with our
own target programs and expectations, on every installed interpreter. Prints "N/M checks".

Deep recursion: DUMPS dumps per version (CI: 20 on 3.8-3.10, 5 elsewhere; the 100-dump
numbers come from bench/bench_verified_walk.py). Never wrong (a stack shown complete must end
at <module>, with only the target's frames) is absolute; how many come out verified complete
is compared with the count of dumps, not with a time: at least half (the bench gives 100/100;
partial stacks are allowed, but must say why)."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")
C = sopt.Checks()


def interpreters():
    out = []
    for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")):
        v = p.split("/")[4]
        minor = int(v.split(".")[1])
        if minor >= 8:
            out.append((v, minor, p))
    if os.path.exists("/usr/bin/python3"):
        out.append(("debian", sys.version_info.minor, "/usr/bin/python3"))
    return out


def dump(pid, *extra):
    r = subprocess.run([sopt.SOPCTL, "dump", "--pid", str(pid), "--json"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr[-300:]}


def recursion(tag, py, dumps):
    counts = {"complete": 0, "partial": 0, "wrong": 0, "unread": 0}
    reasons_ok = True
    with sopt.Target(argv=[py, "-u", os.path.join(TARGETS, "peer_recurse.py"), "20"]) as t:
        for _ in range(dumps):
            rc, doc = dump(t.pid)
            main = [x for x in doc.get("threads", []) if x.get("name") == "MainThread"]
            if rc != 0 or not main:
                counts["unread"] += 1
                continue
            m = main[0]
            fr = [f.get("func") for f in m.get("frames", [])]
            if not m.get("complete"):
                counts["partial"] += 1
                reasons_ok = reasons_ok and bool(m.get("partial"))
            elif fr and fr[-1] == "<module>" and set(fr) <= {"descend", "<module>"}:
                counts["complete"] += 1
            else:
                counts["wrong"] += 1
    print("     %s recursion: %s" % (tag, counts))
    C.check(counts["wrong"] == 0, "%s recursion: 0 of %d cut-off stacks shown complete" % (tag, dumps),
            counts)
    C.check(counts["unread"] == 0, "%s recursion: every dump read" % tag, counts)
    C.check(counts["complete"] * 2 >= dumps, "%s recursion: most dumps verified complete" % tag,
            counts)
    C.check(reasons_ok, "%s recursion: every partial stack says why" % tag)


def exact(tag, py, dumps):
    """A deep recursion (300) churns faster than a snapshot of its chain can be copied: without
    stopping, many dumps end partial (honestly). --exact stops just that thread for the read:
    every dump complete, the pause reported, the target running again after each."""
    counts = {"complete": 0, "other": 0}
    paused, left_stopped = True, []
    with sopt.Target(argv=[py, "-u", os.path.join(TARGETS, "peer_recurse.py"), "300"]) as t:
        for _ in range(dumps):
            rc, doc = dump(t.pid, "--exact")
            m = (doc.get("threads") or [{}])[0]
            fr = [f.get("func") for f in m.get("frames", [])]
            ok = rc == 0 and m.get("complete") and fr and fr[-1] == "<module>"
            counts["complete" if ok else "other"] += 1
            w = doc.get("walk", {})
            if w.get("threads_stopped"):
                paused = paused and m.get("stopped") is True and w.get("pause_ms", -1) >= 0
            with open("/proc/%d/stat" % t.pid) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            if st in ("t", "T"):
                left_stopped.append(st)
    C.check(counts["other"] == 0, "%s --exact deep recursion: every dump complete" % tag, counts)
    C.check(paused, "%s --exact: a stopped thread says so, with its pause" % tag)
    C.check(not left_stopped, "%s --exact: target never left stopped" % tag, left_stopped)


def threads(tag, py, native):
    with sopt.Target(argv=[py, "-u", os.path.join(TARGETS, "peer_threads.py")]) as t:
        C.check(t.ready_line == "ready 0", "%s: C thread started" % tag, t.ready_line)
        extra = ["--native"] if native else []
        rc, doc = dump(t.pid, *extra)
        sfx = " (--native)" if native else ""
        C.check(rc == 0, "%s%s: dump exit 0" % (tag, sfx), doc.get("error"))
        th = {x.get("name"): x for x in doc.get("threads", [])}
        main = th.get("MainThread", {})
        fr = main.get("frames", [])
        C.check(fr and fr[-1]["func"] == "<module>" and main.get("complete"),
                "%s%s: main thread complete, ends at <module>" % (tag, sfx), fr[-3:])
        C.check(main.get("state") == "active", "%s%s: busy main thread active" % (tag, sfx), main)
        cyr = th.get("Рабочий-é", {})
        C.check(bool(cyr), "%s%s: Cyrillic/accented threading name exact" % (tag, sfx),
                list(th))
        C.check(cyr.get("state") == "idle", "%s%s: sleeping thread idle" % (tag, sfx),
                {k: cyr.get(k) for k in ("state", "os_state")})
        kern = th.get("kern-named", {})
        C.check(kern.get("name_source") == "comm" and
                any(f["func"].endswith("kernel_named") for f in kern.get("frames", [])),
                "%s%s: kernel-named Python thread named from comm" % (tag, sfx), list(th))
        others = doc.get("other_threads", [])
        C.check(len(others) == 1 and others[0].get("os_state") in ("S", "R", "D", "t"),
                "%s%s: the C-started OS thread listed with its state" % (tag, sfx), others)
        ntasks = len(os.listdir("/proc/%d/task" % t.pid))
        C.check(len(doc.get("threads", [])) + len(others) == ntasks,
                "%s%s: every OS thread listed (%d)" % (tag, sfx, ntasks))
        if native:
            nat = [f.get("func") for f in (others[0].get("native", []) if others else [])]
            C.check("pause" in nat, "%s --native: the C thread's native stack" % tag, others)
        gc = doc.get("gc", {})
        C.check(gc.get("enabled") is True and gc.get("collecting") in (True, False) and
                len(gc.get("counts", [])) == 3, "%s%s: GC state" % (tag, sfx), gc)


def main():
    for tag, minor, py in interpreters():
        dumps = int(os.environ.get("SOP_PEER_DUMPS", "0")) or (20 if minor <= 10 else 5)
        recursion(tag, py, dumps)
        threads(tag, py, native=False)
        if minor in (8, 10) or tag == "debian":
            threads(tag, py, native=True)
        if minor <= 10:
            exact(tag, py, 10)
    print("%d/%d checks" % (C.passed, C.passed + C.failed))
    C.done()


if __name__ == "__main__":
    main()
