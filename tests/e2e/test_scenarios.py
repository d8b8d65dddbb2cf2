"""test_scenarios.py — the scenario matrix (issue 5): run every program in examples/scenarios/,
point `sopctl run` at it, and check that the rules it is written for fire and that nothing
unrelated fires at warn or high. Healthy programs (`expect: none`) must produce no warn/high
finding at all. Prints the matrix at the end.

A scenario is a Python program whose leading comment block carries its contract:

    # expect: dataloader.starved mem.fork_cow:info   rules that must fire; "id" means a finding
    #                                                 at warn or high, "id:info" at any severity;
    #                                                 "none" for a healthy program
    # also: cpu.oversubscribed                        rules that may also fire (the same cause
    #                                                 seen from another side); optional
    # sopctl: --duration 3 --rate 200                 extra options for `sopctl run`; optional
    # cgroup: memory=200M cpu=1                       run it inside a test cgroup; optional
    # env: TOKENIZERS_PARALLELISM=true                extra environment; optional
    # python: /root/.pyenv/versions/3.13.0/bin/python3   another interpreter; optional
    # target: dead                                    it gets OOM-killed: diagnose the dead pid
    # needs: torch                                    modules it imports (skipped if missing);
    #                                                 "cuda": torch sees a CUDA GPU (skipped if not)
    # verdict: CPU-bound on one core                  text the §9 summary.verdict symptom must hold
    # shows: mem.growth mapped: ckpt.pt                a rule whose evidence / note (a finding or a
    #                                                 cleared check) must hold that text
    # prestart: yes                                   a program that must be old before its
    #                                                 misbehaviour counts: started idle when the cell
    #                                                 begins, it waits on stdin (SOP_SCENARIO_GATE=1)
    #                                                 for its turn; ready is still its measured phase

It prints "ready" on stdout once the misbehaviour is under way (not needed for `target: dead`).
SOP_TEST_PYTHON names the interpreter (default /usr/bin/python3). SOP_SCENARIO_REPORTS=DIR keeps each
run's report as DIR/NAME.CELLINDEX.ATTEMPT.json (tests/gpu/run-gpu-scenarios.sh).
SCENARIOS=glob[,glob...] limits the run to matching file names. A scenario that fails is run once more
(timing on a shared 2-core host); both attempts are printed.

The robustness matrix (issue 11): CELLS=cell[,cell...] runs every scenario in each cell. A cell is
BUDGET/INTENSITY[+hog]: BUDGET "all" (the whole machine) or "cpu1" (a 1-CPU cpuset), INTENSITY 1 or
2 (exported as SOP_SCENARIO_INTENSITY; scenarios scale their work by it), "+hog" runs a foreign
CPU hog (one spinning process per CPU of the budget, not a descendant of the target) beside the
healthy scenarios only, "+hogs" the same beside every scenario (issue 38: a problem is diagnosed beside
foreign load, or its rule says unknown naming the load). CELLS=full is the whole factorial. Default: all/1. Per cell a header key
may be qualified with the budget (`expect@cpu1:`, `also@cpu1:`, `verdict@cpu1:`, `skip@cpu1: why`)
where the program honestly changes meaning on one CPU. At the end, per rule: hits / expected runs,
misses, and false alarms (warn/high where neither expected nor allowed), summed over the cells.

Foreign load: an expected rule that says *unknown* because other processes kept the CPUs busy
("busy with other processes") is not a miss when the harness's own reading of /proc/stat over the
`sopctl run` saw the host at most 15% idle; the row says "(unknown: foreign load)"."""
import fnmatch
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import cg  # noqa: E402
import sopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCEN_DIR = os.path.normpath(os.path.join(HERE, "../../examples/scenarios"))
ORDER = {"high": 0, "warn": 1, "info": 2}


FULL = ["all/1", "all/2", "cpu1/1", "cpu1/2", "all/1+hog"]


def parse_cells(text):
    cells = []
    for c in text.split(","):
        c = c.strip()
        if c == "full":
            cells += FULL
        elif c:
            budget, _, rest = c.partition("/")
            inten, _, hog = rest.partition("+")
            if budget not in ("all", "cpu1") or inten not in ("1", "2") or \
                    hog not in ("", "hog", "hogs"):
                raise SystemExit("CELLS: %r is not BUDGET/INTENSITY[+hog|+hogs] (all|cpu1, 1|2)" % c)
            cells.append(c)
    return cells


def parse_header(path, budget="all"):
    meta = {"expect": [], "also": [], "sopctl": [], "cgroup": {}, "env": {}, "needs": [],
            "python": sopt.PY, "target": "pid", "timeout": 90, "verdict": None, "skip": None,
            "shows": [], "prestart": False}
    cell_keys = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                if line.strip():
                    break
                continue
            key, sep, val = line[1:].strip().partition(":")
            key, val = key.strip(), val.strip()
            key, at, only = key.partition("@")
            if at:  # a key for one budget: applied after the plain ones, replacing them
                if sep and only == budget and key in ("expect", "also", "verdict", "skip"):
                    cell_keys[key] = val
                continue
            if not sep or key not in ("expect", "also", "sopctl", "cgroup", "env", "python",
                                      "target", "needs", "timeout", "verdict", "shows", "prestart"):
                continue
            if key in ("expect", "also", "sopctl", "needs"):
                meta[key] += [w for w in val.split() if w != "none"]
            elif key in ("cgroup", "env"):
                for kv in val.split():
                    k, _, v = kv.partition("=")
                    meta[key][k] = v
            elif key == "timeout":
                meta[key] = float(val)
            elif key == "prestart":
                meta[key] = val == "yes"
            elif key == "shows":
                rid, _, text = val.partition(" ")
                meta[key].append((rid, text.strip()))
            else:
                meta[key] = val
    for key, val in cell_keys.items():
        meta[key] = [w for w in val.split() if w != "none"] if key in ("expect", "also") else val
    return meta


NEEDS = {}


def missing_needs(python, needs):
    """The needs of a scenario its interpreter lacks: a module it cannot import, or "cuda" when
    torch sees no CUDA GPU there. Asked once per (interpreter, need)."""
    out = []
    for m in needs:
        if (python, m) not in NEEDS:
            code = ("import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
                    if m == "cuda" else "import " + m)
            try:
                NEEDS[python, m] = subprocess.run([python, "-c", code], capture_output=True,
                                                  timeout=120).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                NEEDS[python, m] = False
        if not NEEDS[python, m]:
            out.append("a CUDA GPU (torch.cuda.is_available() is false)" if m == "cuda" else m)
    return out


def size_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def wait_ready(p, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            return False
        if line.startswith("ready"):
            return True
    return False


def descendants(pid):
    """Every live descendant of pid (from /proc's ppid links), deepest last."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def end_tree(p):
    """SIGKILL the scenario, its process group and every descendant it started (workers that
    would otherwise be orphaned and keep the CPUs busy for the next scenario)."""
    tree = descendants(p.pid)
    for pid in [p.pid] + tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass


def start_hogs(cpus):
    """One foreign CPU hog per CPU in cpus (own sessions, not in the scenario's tree)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, cpus))
            for _ in cpus]


RUNS = [0]
PRESTARTED = {}  # path -> (process, scratch directory): started idle at the cell's start


def scenario_env(meta, cell):
    """-> (environment, scratch directory) of one run. The scenario's files (datasets,
    checkpoints, logs) go to a directory of this run, removed after it: the scenario is
    SIGKILLed (end_tree), so its own cleanup never runs. On disk, not tmpfs (/var/tmp): the IO
    scenarios need a real page cache."""
    env = dict(os.environ)
    env.update(meta["env"])
    env["SOP_SCENARIO_INTENSITY"] = cell.partition("/")[2].partition("+")[0]
    scratch = tempfile.mkdtemp(prefix="sop-scn-", dir="/var/tmp")
    env["SOP_SCENARIO_TMP"] = env["TMPDIR"] = scratch
    return env, scratch


def prestart(path, meta, cell):
    """Start a `prestart: yes` scenario idle (it blocks on stdin until run_once lets it go), so it
    is old by its turn without the suite waiting for it. Only on the whole machine, no cgroup."""
    if not meta["prestart"] or meta["cgroup"] or not cell.startswith("all/") or meta["skip"]:
        return
    env, scratch = scenario_env(meta, cell)
    env["SOP_SCENARIO_GATE"] = "1"
    p = subprocess.Popen([meta["python"], "-u", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True, cwd=SCEN_DIR,
                         start_new_session=True)
    PRESTARTED[path] = (p, scratch)


def end_prestarted():
    for p, scratch in PRESTARTED.values():
        end_tree(p)
        p.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    PRESTARTED.clear()


def run_once(path, meta, cell="all/1"):
    """-> (report or None, error text)"""
    RUNS[0] += 1
    budget, _, rest = cell.partition("/")
    hog = rest.partition("+")[2]
    early = PRESTARTED.pop(path, None)
    if early:
        p, scratch = early
    else:
        env, scratch = scenario_env(meta, cell)
    argv = [meta["python"], "-u", path]
    group = None
    hogs = []
    try:
        c = meta["cgroup"]
        if early:
            try:
                p.stdin.write("go\n")
                p.stdin.close()
            except OSError:
                pass  # it died idle: wait_ready says so with its stderr
        elif c or budget == "cpu1":
            group = cg.TestCgroup(
                "scn%d" % RUNS[0],  # a new cgroup path per run: no kill of an earlier run in it
                memory_max_bytes=size_bytes(c["memory"]) if "memory" in c else None,
                cpu_quota_cpus=float(c["cpu"]) if "cpu" in c else None,
                cpuset_cpus=str(os.cpu_count() - 1) if budget == "cpu1" else None)
            p = group.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True, cwd=SCEN_DIR, start_new_session=True)
        else:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 text=True, cwd=SCEN_DIR, start_new_session=True)
        if hog:
            hogs = start_hogs({os.cpu_count() - 1} if budget == "cpu1"
                              else set(range(os.cpu_count())))
        try:
            if meta["target"] == "dead":
                try:
                    p.wait(timeout=meta["timeout"])
                except subprocess.TimeoutExpired:
                    return None, "the scenario did not die"
            elif not wait_ready(p, meta["timeout"]):
                p.kill()
                return None, "not ready: " + p.stderr.read()[-1500:]
            idle0 = host_idle_ticks()
            code, rep, err = sopt.run_json("--pid", p.pid, *meta["sopctl"])
            if rep is None:
                return None, "sopctl exit %d: %s" % (code, err[-1500:])
            rep["_harness_host_idle_pct"] = host_idle_pct(idle0, host_idle_ticks())
            return rep, ""
        finally:
            end_tree(p)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        if group:
            group.close()
        shutil.rmtree(scratch, ignore_errors=True)


def host_idle_ticks():
    """(idle + iowait, total) jiffies of the host, from /proc/stat's cpu line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v[:8])


def host_idle_pct(a, b):
    """The host's idle % between two host_idle_ticks() readings (the harness's own measure)."""
    total = b[1] - a[1]
    return 100.0 * (b[0] - a[0]) / total if total > 0 else 100.0


# A rule whose measure needs the job's threads to run side by side says "unknown" when other
# processes kept the CPUs busy (issue 38: never clear on evidence the load spoilt). An expected
# rule held back that way is not a miss when the harness itself saw the host that busy.
FOREIGN_LOAD_NOTE = "busy with other processes"
FOREIGN_LOAD_IDLE_PCT = 15


def held_by_load(rep, note):
    return FOREIGN_LOAD_NOTE in note and \
        rep.get("_harness_host_idle_pct", 100) <= FOREIGN_LOAD_IDLE_PCT


# A verdict that contradicts the figures is wrong whatever the scenario expects (issue 38).
GROWTH_RULES = ("progress.hang", "progress.threads_grow", "progress.zombies", "mem.growth")


def contradictions(findings):
    out = []
    v = [f for f in findings if f["id"] == "summary.verdict"]
    if not v:
        return out
    sym, ev = v[0].get("symptom", ""), v[0].get("evidence", "")
    if "many cores" in sym:
        m = re.search(r"\(([0-9.]+) cores", ev)
        if not m or float(m.group(1)) < 1.5:
            out.append("verdict %r under 1.5 cores of CPU: %s" % (sym, ev[:200]))
    loud = [f["id"] for f in findings if f["id"] in GROWTH_RULES and ORDER.get(f["severity"], 9) <= 1]
    if loud and "waiting (network, locks or for work)" in sym:
        out.append("verdict %r (idle may be healthy) while %s fired" % (sym, ", ".join(loud)))
    return out


def judge(rep, meta):
    """-> (ok, fired text, problems)"""
    findings = rep.get("findings", [])
    loud = {f["id"]: f["severity"] for f in findings if ORDER.get(f["severity"], 9) <= 1}
    any_sev = {f["id"]: f["severity"] for f in findings}
    problems = []
    wanted = set()
    # what a rule that did not fire said instead (its cleared or unknown note): a miss on a
    # machine nobody can log into is read from this line
    notes = {f["id"]: f.get("note") or f.get("reason") or "" for f in
             rep.get("cleared", []) + rep.get("unknown", [])}

    def why(rid):
        return ": %s" % notes[rid][:400] if notes.get(rid) else ""
    unknown = {f["id"]: f.get("reason") or "" for f in rep.get("unknown", [])}
    held = []
    for e in meta["expect"]:
        rid, _, sev = e.partition(":")
        wanted.add(rid)
        if rid not in any_sev and held_by_load(rep, unknown.get(rid, "")):
            held.append(rid)  # said why it could not measure, and the host was that busy
            continue
        if sev == "info":
            if rid not in any_sev:
                problems.append("%s did not fire%s" % (rid, why(rid)))
        elif rid not in loud:
            problems.append("%s did not fire at warn/high%s" % (
                rid, " (%s)" % any_sev[rid] if rid in any_sev else why(rid)))
    for f in findings:
        rid, sev = f["id"], f["severity"]
        if rid in loud and rid not in wanted and rid not in meta["also"]:
            problems.append("unrelated %s fired (%s): %s" % (rid, sev, (f.get("evidence") or "")[:400]))
    if meta["verdict"]:
        v = [f.get("symptom", "") for f in findings if f["id"] == "summary.verdict"]
        if not v or meta["verdict"] not in v[0]:
            problems.append("summary.verdict is %r, not %r" % (v[0] if v else None, meta["verdict"]))
    problems += contradictions(findings)
    for rid, text in meta["shows"]:
        said = [f.get("evidence") or f.get("note") or f.get("reason") or ""
                for f in findings + rep.get("cleared", []) + rep.get("unknown", []) if f["id"] == rid]
        if not any(text in s for s in said):
            problems.append("%s does not say %r: %r" % (rid, text, said[0][-300:] if said else None))
    for r in rep.get("rule_errors", []):
        problems.append("rule error %s: %s" % (r.get("id"), r.get("message")))
    fired = " ".join("%s(%s)" % (f["id"], f["severity"]) for f in findings
                     if not f["id"].startswith("summary."))
    verdict = [f.get("symptom", "") for f in findings if f["id"] == "summary.verdict"]
    if held:
        fired = (fired + " " if fired else "") + " ".join(
            "%s(unknown: foreign load, host %.0f%% idle)" % (rid, rep["_harness_host_idle_pct"])
            for rid in held)
    return not problems, (fired or "-") + " | §9: " + (verdict[0] if verdict else "-"), problems


def tally(stats, rep, meta):
    """Per rule: [expected runs, hits, false alarms], from one run's report (None: no report)."""
    loud = set()
    if rep is not None:
        loud = {f["id"] for f in rep.get("findings", []) if ORDER.get(f["severity"], 9) <= 1}
        sev = {f["id"] for f in rep.get("findings", [])}
    unknown = {f["id"]: f.get("reason") or "" for f in (rep or {}).get("unknown", [])}
    for e in meta["expect"]:
        rid, _, want = e.partition(":")
        st = stats.setdefault(rid, [0, 0, 0])
        if rep is not None and held_by_load(rep, unknown.get(rid, "")):
            continue  # could not be measured beside the foreign load (judge)
        st[0] += 1
        if rep is not None and rid in (sev if want == "info" else loud):
            st[1] += 1
    wanted = {e.partition(":")[0] for e in meta["expect"]}
    for rid in loud - wanted - set(meta["also"]):
        if not rid.startswith("summary."):
            stats.setdefault(rid, [0, 0, 0])[2] += 1


def main():
    c = sopt.Checks()
    pattern = os.environ.get("SCENARIOS", "*")
    cells = parse_cells(os.environ.get("CELLS", "all/1"))
    pats = pattern.split(",")
    paths = sorted(p for p in glob.glob(os.path.join(SCEN_DIR, "*.py"))
                   if any(fnmatch.fnmatch(os.path.basename(p), q)
                          or fnmatch.fnmatch(os.path.basename(p)[:-3], q) for q in pats))
    c.check(paths, "scenarios found in %s matching %r" % (SCEN_DIR, pattern))
    rows = []
    stats = {}
    failed = []
    t_all = time.time()
    for cells_done, cell in enumerate(cells, 1):
        budget, _, rest = cell.partition("/")
        hog = rest.endswith("+hog")
        end_prestarted()
        for path in paths:
            meta = parse_header(path, budget)
            if meta["prestart"] and not (hog and meta["expect"]) and os.path.exists(
                    meta["python"]) and not missing_needs(meta["python"], meta["needs"]):
                prestart(path, meta, cell)
        for path in paths:
            name = os.path.basename(path)[:-3]
            meta = parse_header(path, budget)
            if hog and meta["expect"]:
                continue  # the foreign hog is a false-alarm test: healthy programs only
            if meta["skip"]:
                print("skip %s [%s]: %s" % (name, cell, meta["skip"]))
                rows.append((cell, name, " ".join(meta["expect"]) or "none", meta["skip"], "SKIP"))
                continue
            if not os.path.exists(meta["python"]):
                missing = [meta["python"]]
            else:  # asked of the interpreter that will run it, not of this one
                missing = missing_needs(meta["python"], meta["needs"])
            if missing:
                print("skip %s: needs %s" % (name, ", ".join(missing)))
                rows.append((cell, name, " ".join(meta["expect"]) or "none", "skipped", "SKIP"))
                continue
            with open(path) as f:
                text = f.read()
            # a fixed-size program says why in a "# SOP_SCENARIO_INTENSITY not read: ..." line
            scales = "SOP_SCENARIO_INTENSITY" in text and "SOP_SCENARIO_INTENSITY not read" not in text
            if not scales and "/2" in cell:
                why = text.split("SOP_SCENARIO_INTENSITY not read:", 1)[1].split("\n", 1)[0].strip() \
                    if "SOP_SCENARIO_INTENSITY not read:" in text else "no reason given"
                print("note %s [%s]: fixed size, the same program as at intensity 1 (%s)" % (name, cell, why))
            ok, fired, problems, rep = False, "-", [], None
            tries = []
            for attempt in (1, 2):
                t0 = time.time()
                rep, err = run_once(path, meta, cell)
                keep = os.environ.get("SOP_SCENARIO_REPORTS")
                if keep and rep is not None:
                    with open(os.path.join(keep, "%s.%d.%d.json" % (name, cells_done, attempt)),
                              "w") as f:
                        json.dump(rep, f, indent=1)
                if rep is None:
                    ok, fired, problems = False, "-", [err]
                else:
                    ok, fired, problems = judge(rep, meta)
                print("%s %s [%s] attempt %d (%.1f s): %s%s" % (
                    "ok  " if ok else "miss", name, cell, attempt, time.time() - t0, fired,
                    "" if ok else " -- " + "; ".join(problems)), flush=True)
                tries.append("attempt %d: %s -- %s" % (attempt, fired, "; ".join(problems)))
                if ok:
                    break
            if not ok:
                failed.append("%s [%s]: %s" % (name, cell, " || ".join(tries)))
            tally(stats, rep, meta)
            c.check(ok, "scenario %s [%s]" % (name, cell), "; ".join(problems))
            rows.append((cell, name, " ".join(meta["expect"]) or "none", fired,
                         "ok" if ok else "FAIL"))

    end_prestarted()
    # The matrix: result first so a failure is easy to spot; "fired" is every finding (severity)
    # and, after "|", the §9 verdict of the run.
    hdr = ("cell", "scenario", "expects", "fired", "result")
    w = [max(len(r[i]) for r in rows + [hdr]) for i in range(3)]
    print("\n%-6s  %-*s  %-*s  %-*s  %s" % ("result", w[0], "cell", w[1], "scenario", w[2],
                                            "expects", "fired | §9 verdict"))
    for r in rows:
        print("%-6s  %-*s  %-*s  %-*s  %s" % (r[4], w[0], r[0], w[1], r[1], w[2], r[2], r[3]))
    print("\nper rule over %d cell(s) %s (%.0f s): hits/expected, misses, false alarms"
          % (len(cells), ",".join(cells), time.time() - t_all))
    for rid in sorted(stats):
        exp, hits, fa = stats[rid]
        print("  %-34s %3d/%-3d  miss %-3d  false %d" % (rid, hits, exp, exp - hits, fa))
    # last, where a log cut to its tail still shows them: each failed scenario, both attempts
    for line in failed:
        print("FAILED " + line)
    c.done()


if __name__ == "__main__":
    try:
        main()
    finally:
        end_prestarted()
