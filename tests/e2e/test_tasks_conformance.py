#!/usr/bin/env python3
"""test_tasks_conformance.py — `sopctl tasks` against the target's own view of its asyncio
tasks, on every installed interpreter (pyenv 3.8-3.13 and Debian's python3; with SOP_PYTHONS=sid
Debian sid's 3.13-3.15 in the sid root): targets with 1,
100 and 10,000 filler tasks besides one task of each kind sop names (tests/e2e/targets/
tasks_target.py) print asyncio.all_tasks() with Task.get_stack() and each await chain
(cr_await / gi_yieldfrom, as CPython's own inspection follows it) to a file; `sopctl tasks
--json` must list exactly those pending tasks, with exactly those chains (function, file,
line per level), say what each named task waits on, give the gather tree, and read 10,000
tasks in at most 150x the read time of 100 (read_ms, the best of three reads each: linear, whatever
the machine's speed or load). The target is never stopped (sop reads
with process_vm_readv only; its state is checked not to be 't' during the read).
SIZES (env, comma-separated) and PYTHONS (substring filter) narrow the run. Prints N/M checks."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "targets", "tasks_target.py")
C = sopt.Checks()
# A read of 10,000 tasks costs at most this many times a read of 100 (the best of three each, in one
# run): linear work is at most 100x (less the fixed cost of finding the runtime), a quadratic walk
# 10,000x. A ratio, not a bound in ms: a busy or slow machine slows both alike (issue 38: the 200 ms
# bound failed on sid's 3.15 beside one CPU hog, 206.7 ms).
READ_RATIO_10K = 150.0
BEST_MS = {}

KINDS = {
    "Task-1": "event",
    "chain-3-levels": "future",
    "lock-holder": "event",
    "lock-waiter-1": "lock",
    "lock-waiter-2": "lock",
    "sem-holder": "event",
    "sem-waiter": "semaphore",
    "queue-consumer": "queue_get",
    "queue-producer": "queue_put",
    "sleeper": "sleep",
    "gather-parent": "gather",
    "gather-child-1": "event",
    "executor-user": "executor",
    "awaits-chain-task": "task",
}


def interpreters():
    out = []
    want = os.environ.get("PYTHONS", "")
    if sopt.pythons_wanted("local"):
        for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")):
            v = p.split("/")[4]
            if int(v.split(".")[1]) >= 8:
                out.append((v, p))
        if os.path.exists("/usr/bin/python3"):
            out.append(("debian", "/usr/bin/python3"))
    out += [(tag, path) for tag, _, path in sopt.sid_interpreters()]
    return [x for x in out if not want or any(w and w in x[0] for w in want.split(","))]


def tasks_json(pid, *extra):
    r = subprocess.run([sopt.SOPCTL, "tasks", "--pid", str(pid), "--json"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr[-300:]}


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


def one(tag, py, n, tmp):
    out = os.path.join(tmp, "view-%s-%d.json" % (tag, n))
    with sopt.Target(argv=[py, "-u", TARGET, str(n), out], timeout=120) as t:
        deadline = time.time() + 120
        while not os.path.exists(out) and time.time() < deadline:
            time.sleep(0.05)
        with open(out) as f:
            view = json.load(f)["tasks"]
        rc, doc = tasks_json(t.pid)
        state = proc_state(t.pid)
        rc_tree, tree_doc = tasks_json(t.pid, "--tree")
        rc_text, text, _ = sopt.sopctl("tasks", "--pid", t.pid, "--tree")
        # The read's own cost, not the shared machine's load: the best of three reads.
        times = [doc.get("read_ms", 1e9)]
        for _ in range(2 if n >= 100 else 0):
            times.append(tasks_json(t.pid)[1].get("read_ms", 1e9))
        dump_rc, dump_text, _ = sopt.sopctl("dump", "--pid", t.pid, "--tasks")
        rd = subprocess.run([sopt.SOPCTL, "dump", "--pid", str(t.pid), "--tasks", "--json"],
                            capture_output=True, text=True, timeout=120)
        try:
            dump_doc = json.loads(rd.stdout)
        except ValueError:
            dump_doc = {}
    where = "%s n=%d" % (tag, n)
    dt = dump_doc.get("asyncio_tasks", {})
    C.check(rd.returncode == 0 and dump_doc.get("threads") and
            sorted(x["name"] for x in dt.get("tasks", []) if x.get("state") != "done") ==
            sorted(x["name"] for x in view),
            where + ": dump --tasks --json: the stacks and the same pending tasks",
            str(dt.get("counts")))
    C.check(dump_rc == 0 and "\nasyncio tasks\n" in dump_text and 'Task "sleeper" pending' in dump_text
            and "Thread " in dump_text, where + ": dump --tasks text: threads, then the tasks",
            dump_text[-300:])
    C.check(rc == 0 and doc.get("complete") is True, where + ": read complete, exit 0",
            "rc=%s %s" % (rc, str(doc)[:300]))
    C.check(state not in ("t", "T"), where + ": target not stopped", state)
    sop = {x["name"]: x for x in doc.get("tasks", []) if x.get("state") != "done"}
    own = {x["name"]: x for x in view}
    C.check(set(sop) == set(own), where + ": the same %d pending tasks" % len(own),
            "only sop: %s; only target: %s" % (sorted(set(sop) - set(own))[:5],
                                               sorted(set(own) - set(sop))[:5]))
    bad_chain, bad_stack = [], []
    for name, o in own.items():
        s = sop.get(name)
        if not s:
            continue
        chain = [[f["func"], f["file"], f["line"]] for f in s.get("chain", [])]
        if chain != o["chain"] or not s.get("chain_complete"):
            bad_chain.append((name, chain, o["chain"]))
        if o["stack"] != chain[:1]:
            bad_stack.append((name, chain[:1], o["stack"]))
    C.check(not bad_chain, where + ": every await chain equal (function, file, line)",
            str(bad_chain[:2]))
    C.check(not bad_stack, where + ": Task.get_stack() is the chain's first level",
            str(bad_stack[:2]))
    kinds = {k: (sop.get(k) or {}).get("waits_on", {}) or {} for k in KINDS}
    wrong = {k: v.get("kind") for k, v in kinds.items() if v.get("kind") != KINDS[k]}
    C.check(not wrong, where + ": what each task waits on", str(wrong))
    C.check(kinds["sleeper"].get("sleep_s") == 3600, where + ": asyncio.sleep's delay read",
            str(kinds["sleeper"]))
    g = sop.get("gather-parent", {})
    C.check(sorted(a.get("name") for a in g.get("awaits", [])) ==
            ["gather-child-1", "gather-child-2"], where + ": gather's children",
            str(g.get("awaits")))
    a = sop.get("awaits-chain-task", {})
    C.check([x.get("name") for x in a.get("awaits", [])] == ["chain-3-levels"] and
            [x.get("name") for x in sop.get("chain-3-levels", {}).get("awaited_by", [])] ==
            ["awaits-chain-task"], where + ": task awaiting a task, both ways")
    # The lock and the semaphore themselves: every waiter's `object`, their own fields
    # (_waiters, _locked, _value) and the holder found by the `async with` it is inside.
    locks = {lk.get("kind"): lk for lk in doc.get("locks", [])}
    for kind, holder, waiters in (("lock", "lock-holder", ["lock-waiter-1", "lock-waiter-2"]),
                                  ("semaphore", "sem-holder", ["sem-waiter"])):
        lk = locks.get(kind, {})
        objs = {(sop.get(w, {}).get("waits_on") or {}).get("object") for w in waiters}
        C.check(objs == {lk.get("id")} and lk.get("waiting") == len(waiters) and
                lk.get("queue") == len(waiters) and
                [h.get("name") for h in lk.get("holders", [])] == [holder] and
                (lk.get("locked") is True if kind == "lock" else lk.get("value") == 0),
                where + ": the %s waited on, its queue and its holder" % kind,
                "%s %s" % (objs, lk))
    # Every task of the target is kept (a list, the gather, an awaiter): none is unreferenced.
    loose = [x["name"] for x in sop.values() if x.get("unreferenced")]
    C.check(not loose, where + ": no kept task reads as unreferenced", str(loose[:5]))
    roots = {r["name"]: r for r in tree_doc.get("tree", [])}
    kids = [c["name"] for c in roots.get("gather-parent", {}).get("children", [])]
    C.check(rc_tree == 0 and sorted(kids) == ["gather-child-1", "gather-child-2"] and
            "gather-child-1" not in roots, where + ": --tree nests the gather's children",
            str(kids))
    C.check(rc_text == 0 and '  + Task "gather-child-1"' in text,
            where + ": text --tree indents a child under its parent", text[:400])
    BEST_MS[tag, n] = min(times)
    if n >= 10000:
        ms = min(times)
        print("  %s: %d tasks read in %.1f ms, best of %s (%d GC objects, %d reads)" %
              (where, len(sop), ms, "/".join("%.0f" % x for x in times),
               doc.get("gc_objects", 0), doc.get("reads", 0)))
        small = BEST_MS.get((tag, 100))
        if small:
            print("  %s: %.1fx the read of 100 tasks (%.1f ms)" % (where, ms / small, small))
            C.check(ms <= READ_RATIO_10K * small,
                    where + ": 10,000 tasks read in at most %g x the time of 100" % READ_RATIO_10K,
                    "%.1f ms vs %.1f ms (%.1fx)" % (ms, small, ms / small))


def busy(tag, py):
    """A task running now (it blocks the loop) and one whose cancel() is not processed yet."""
    with sopt.Target(argv=[py, "-u", TARGET, "busy"], timeout=60) as t:
        time.sleep(0.2)
        rc, doc = tasks_json(t.pid)
    by = {x["name"]: x for x in doc.get("tasks", [])}
    sp, vi, main = by.get("spinner", {}), by.get("victim", {}), by.get("Task-1", {})
    C.check(rc == 0 and sp.get("running") is True and sp.get("state") == "pending" and
            [f["func"] for f in sp.get("chain", [])][:1] == ["spin"] and
            sp.get("waits_on") is None, tag + " busy: the running task is marked running",
            str(sp)[:300])
    C.check(vi.get("state") == "cancelling" and not vi.get("running"),
            tag + " busy: a task asked to cancel is cancelling", str(vi)[:300])
    C.check([a.get("name") for a in main.get("awaits", [])] == ["spinner"] and
            not main.get("running") and doc.get("counts", {}).get("running") == 1,
            tag + " busy: the main task awaits the running one", str(main)[:300])


def errors():
    """Exit status 2 on usage, 3 (with the reason) on a process that is not CPython."""
    rc, _, _ = sopt.sopctl("tasks")
    C.check(rc == 2, "tasks without --pid: exit 2", str(rc))
    p = subprocess.Popen(["sleep", "30"])
    try:
        rc, doc = tasks_json(p.pid)
    finally:
        p.kill()
        p.wait()
    reasons = [m.get("reason") for m in doc.get("missing_evidence", [])]
    C.check(rc == 3 and "not a CPython process" in reasons, "tasks on a non-Python process: exit 3, "
            "says why", "rc=%s %s" % (rc, reasons))


def main():
    errors()
    sizes = [int(x) for x in os.environ.get("SIZES", "1,100,10000").split(",") if x]
    with tempfile.TemporaryDirectory(prefix="sop-tasks-") as tmp:
        for tag, py in interpreters():
            try:
                busy(tag, py)
            except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                C.check(False, "%s busy: ran" % tag, str(e)[:300])
            for n in sizes:
                try:
                    one(tag, py, n, tmp)
                except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
                    C.check(False, "%s n=%d: ran" % (tag, n), str(e)[:300])
    print("%d/%d checks" % (C.passed, C.passed + C.failed))
    C.done()


if __name__ == "__main__":
    main()
