"""test_cli.py — sopctl as a user meets it, on real processes: exit codes, bad input (a
vanished pid, broken rules, evidence that is not ours, bad options), an unprivileged run
against another user's process, control characters from the target escaped in every format,
and replay of saved evidence giving the same findings as the live run."""
import json
import os
import subprocess
import tempfile

from sopt import PY, SOPCTL, Checks, Target, ids, run_json, sopctl

t = Checks()

# An idle Python process: no warn/high finding, exit 0, in every format.
IDLE = "import time; print('ready', flush=True); time.sleep(120)"
with Target(IDLE) as idle:
    code, rep, err = run_json("--pid", idle.pid, "--duration", "0.5")
    t.check(code == 0, "idle process: exit 0", (code, err, rep))
    t.check(rep is not None and rep.get("schema") == 1, "report JSON has schema 1", rep)
    t.check(rep and rep["target"]["pid"] == idle.pid, "report names the target pid")
    t.check(rep and not ids(rep, min_severity="warn"), "idle process: no warn/high finding",
            rep and rep.get("findings"))
    for fmt in ("md", "text"):
        code, out, err = sopctl("run", "--pid", idle.pid, "--duration", "0", "--format", fmt)
        t.check(code == 0 and "pid %d" % idle.pid in out, "format %s renders" % fmt, (code, out, err))
    code, out, err = sopctl("run", "--pid", idle.pid, "--duration", "0", "--lang", "zh")
    t.check(code == 0 and "诊断报告" in out, "--lang zh renders Chinese", out[:500])

    # Replay: the saved evidence gives the same verdicts as the live run on it.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ev.json")
        code, out, err = sopctl("evidence", "--pid", idle.pid, "--duration", "0.5", "-o", path)
        t.check(code == 0 and os.path.getsize(path) > 100, "evidence -o writes JSON", err)
        ev = json.load(open(path))
        for key in ("schema", "pid", "duration_s", "host", "proc", "threads", "cgroup", "missing"):
            t.check(key in ev, "evidence has '%s'" % key)
        # block: each disk of host.disks[] with its queue as /sys/block/NAME/queue says
        disks = [d["name"] for d in ev.get("host", {}).get("disks", [])]
        devs = ev.get("block", {}).get("devices", [])
        t.check([d.get("name") for d in devs] == disks, "block.devices are host.disks[]",
                (disks, devs))
        for dev in devs:
            q = "/sys/block/%s/queue/" % dev["name"]
            try:
                sched = open(q + "scheduler").read().split()
                ra = int(open(q + "read_ahead_kb").read())
                rot = int(open(q + "rotational").read())
            except OSError:
                continue
            active = [x[1:-1] for x in sched if x.startswith("[")]
            t.check(dev.get("scheduler") == (active[0] if active else None) and
                    dev.get("schedulers") == " ".join(x.strip("[]") for x in sched) and
                    dev.get("read_ahead_kb") == ra and dev.get("rotational") == rot,
                    "block %s: the queue's settings as sysfs has them" % dev["name"], (dev, sched, ra))
        code1, rep1, _ = run_json("--evidence", path)
        code2, rep2, _ = run_json("--evidence", path)
        t.check(code1 == 0 and rep1 is not None, "replay of saved evidence runs", code1)
        verdicts = lambda r: sorted((k, i) for k in ("findings", "cleared", "unknown") for i in ids(r, k))
        t.check(rep1 and verdicts(rep1) == verdicts(rep2), "replay is deterministic")

    # Unprivileged against another user's (root's) process: partial evidence, listed missing.
    code, out, err = sopctl("evidence", "--pid", idle.pid, "--duration", "0", user="nobody")
    ev = json.loads(out) if code == 0 else {}
    t.check(code == 0, "unprivileged evidence of a root process still runs", (code, err))
    probes = " ".join(m.get("probe", "") + ":" + m.get("reason", "") for m in ev.get("missing", []))
    t.check("proc" in ev and ev["proc"].get("comm") == "python3", "unprivileged: stat still read",
            ev.get("proc"))
    t.check("io" in probes or "environ" in probes or "smaps" in probes,
            "unprivileged: unreadable files listed in missing", probes)
    t.check("env" not in ev.get("proc", {}) or not ev["proc"]["env"],
            "unprivileged: no environment read", ev.get("proc", {}).get("env"))
    code, out, err = sopctl("run", "--pid", idle.pid, "--duration", "0", user="nobody")
    t.check(code in (0, 1) and "Missing evidence" in out, "unprivileged run reports missing evidence",
            (code, out[-800:], err))

# A pid that does not exist (and was never OOM-killed): exit 3, one line.
dead = subprocess.Popen(["true"])
dead.wait()
code, out, err = sopctl("run", "--pid", dead.pid)
t.check(code == 3, "vanished pid: exit 3", (code, err))
t.check(len(err.strip().splitlines()) == 1 and str(dead.pid) in err, "vanished pid: one line naming it", err)
code, out, err = sopctl("evidence", "--pid", dead.pid)
t.check(code == 3, "evidence of a vanished pid: exit 3", (code, err))

# Bad options and bad input: exit 2 with a clear message.
for args, what in ((["run"], "run without a target"),
                   (["run", "--pid", "abc"], "non-numeric pid"),
                   (["run", "--pid", "1", "--format", "xml"], "unknown format"),
                   (["run", "--pid", "1", "--lang", "fr"], "unknown lang"),
                   (["run", "--pid", "1", "--duration", "-1"], "negative duration"),
                   (["run", "--pid", "1", "--set", "no_such_threshold=1"], "unknown threshold"),
                   (["frobnicate"], "unknown command")):
    code, out, err = sopctl(*args)
    t.check(code == 2 and err.strip(), "%s: exit 2 with a message" % what, (code, err))

with tempfile.TemporaryDirectory() as d:
    bad = os.path.join(d, "broken.lua")
    open(bad, "w").write("thresholds {}\nrule { id = 'x', check = function(ev, th)\n  return hit {\nend }\n")
    code, out, err = sopctl("check", bad)
    t.check(code == 2 and "broken.lua:" in err, "check of a broken pack: exit 2 with file:line", err)
    code, out, err = sopctl("run", bad, "--pid", os.getpid())
    t.check(code == 2 and "broken.lua:" in err, "run with a broken pack: exit 2 with file:line", err)
    code, out, err = sopctl("check", os.path.join(d, "absent.lua"))
    t.check(code == 2 and "absent.lua" in err, "missing rule file: exit 2 naming it", err)
    notours = os.path.join(d, "package.json")
    open(notours, "w").write('{"name": "left-pad", "version": "1.3.0"}')
    code, out, err = sopctl("run", "--evidence", notours)
    t.check(code == 2 and "not sop evidence" in err, "evidence that is not ours: exit 2", err)
    garbage = os.path.join(d, "garbage.json")
    open(garbage, "wb").write(b"\x00\xffnot json at all")
    code, out, err = sopctl("run", "--evidence", garbage)
    t.check(code == 2 and "not sop evidence" in err, "garbage evidence: exit 2", err)
    # A key of the schema with another type (the types come from the schema's groups and
    # top-level rows): refused, naming the key, not run with rules reading nonsense.
    for doc, what in [('{"schema":1,"pid":3,"host":{},"threads":[1]}', "key 'threads[0]' is a number, expected an object"),
                      ('{"schema":1,"pid":3,"host":{},"children":[{},"x"]}', "key 'children[1]' is a string, expected an object"),
                      ('{"schema":1,"pid":3,"host":{},"gpu":5}', "key 'gpu' is a number, expected an object"),
                      ('{"schema":1,"pid":3,"host":{},"rank":[]}', "key 'rank' is an array, expected an object"),
                      ('{"schema":1,"pid":3,"host":{},"alive":"yes"}', "key 'alive' is a string, expected a boolean")]:
        typed = os.path.join(d, "typed.json")
        open(typed, "w").write(doc)
        code, out, err = sopctl("run", "--evidence", typed)
        t.check(code == 2 and what in err, "evidence %s: exit 2" % doc, err)
    code, out, err = sopctl("run", "--evidence", os.path.join(d, "absent.json"))
    t.check(code == 2 and "absent.json" in err, "missing evidence file: exit 2 naming it", err)

# Control characters from the target never reach the output raw.
EVIL = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, b"ev\x1b[31mil\x07", 0, 0, 0)   # PR_SET_NAME: the comm
print('ready', flush=True)
time.sleep(120)
"""
with Target(argv=[PY, "-u", "-c", EVIL, "arg\x1b]0;title\x07", "new\nline"]) as evil:
    for fmt in ("md", "json", "text"):
        for lang in ("en", "zh"):
            code, out, err = sopctl("run", "--pid", evil.pid, "--duration", "0", "--format", fmt, "--lang", lang)
            ours = "\n\t" if fmt == "json" else "\n"  # the format's own layout characters
            raw = [c for c in out if (ord(c) < 32 and c not in ours) or ord(c) == 127 or 0x80 <= ord(c) <= 0x9f]
            t.check(code in (0, 1) and not raw, "%s/%s: no raw control characters" % (fmt, lang),
                    (code, repr(out[:600]), err))
    code, out, err = sopctl("run", "--pid", evil.pid, "--duration", "0", "--format", "md")
    t.check("new\\x0aline" in out and "\\x1b" in out and "title" in out, "md shows the escapes", out[:400])
    code, out, err = sopctl("run", "--pid", evil.pid, "--duration", "0", "--format", "json")
    rep = json.loads(out)
    t.check("\x1b" in rep["target"]["comm"] and "\n" in rep["target"]["cmdline"],
            "JSON keeps the real bytes, escaped", rep["target"])
    code, out, err = sopctl("evidence", "--pid", evil.pid, "--duration", "0")
    t.check(code == 0 and "\x1b" not in out, "evidence JSON escapes control characters")

# The default site file /etc/sop/site.lua (root): loaded by `run` when present and no --site or
# $SOP_SITE says otherwise; --no-site skips it; a broken one stops the run. Only when the machine
# has none: the test creates it and removes exactly what it created.
SITE = "/etc/sop/site.lua"
if os.geteuid() == 0 and not os.path.exists(SITE):
    made_dir = not os.path.isdir("/etc/sop")
    os.makedirs("/etc/sop", exist_ok=True)
    env = dict(os.environ)
    env.pop("SOP_SITE", None)
    try:
        with open(SITE, "w") as f:
            f.write('rule { id = "site.default_loaded", section = "9", severity = "info", title = "t",\n'
                    '  reads = { "pid" }, uses = {}, check = function(ev) return clear("loaded") end }\n')
        os.chmod(SITE, 0o644)
        with Target(IDLE) as idle:
            def cleared(*extra):
                r = subprocess.run([SOPCTL, "run", "--pid", str(idle.pid),
                                    "--duration", "0", "--format", "json", *extra],
                                   capture_output=True, text=True, env=env)
                try:
                    return r.returncode, [c["id"] for c in json.loads(r.stdout)["cleared"]], r.stderr
                except ValueError:
                    return r.returncode, [], r.stderr
            code, got, err = cleared()
            t.check(code == 0 and "site.default_loaded" in got, "/etc/sop/site.lua loaded by default", (code, err))
            code, got, err = cleared("--no-site")
            t.check(code == 0 and "site.default_loaded" not in got, "--no-site skips it", (code, err))
            with open(SITE, "w") as f:
                f.write("thresholds { rss_limit_pct = \n")
            code, got, err = cleared()
            t.check(code == 2 and SITE in err, "a broken default site file: exit 2, named", (code, err))
    finally:
        os.unlink(SITE)
        if made_dir:
            os.rmdir("/etc/sop")
else:
    print("skip: /etc/sop/site.lua exists or not root")

# A site's copy of the pack: its plugins/ next to its rules.lua are the ones that run (the
# built-in ones only fill in what is not there), so an edit to a plugin takes effect; a plugin
# that cannot be trusted is refused, named, not silently replaced by the built-in one.
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
with tempfile.TemporaryDirectory() as d:
    os.chmod(d, 0o755)
    os.mkdir(os.path.join(d, "plugins"))
    with open(os.path.join(SRC, "rules.lua")) as f:
        rules = f.read()
    with open(os.path.join(d, "rules.lua"), "w") as f:
        f.write(rules)
    for name in os.listdir(os.path.join(SRC, "plugins")):
        if name.endswith(".lua"):
            with open(os.path.join(SRC, "plugins", name)) as f:
                text = f.read()
            with open(os.path.join(d, "plugins", name), "w") as f:
                f.write(text)
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    code, same, err = sopctl("check", os.path.join(d, "rules.lua"), "--doc")
    code2, builtin, _ = sopctl("check", "default", "--doc")
    t.check(code == 0 and code2 == 0 and same == builtin,
            "an unchanged copy of the pack documents the same rules as the built-in one", (code, err))
    gil = os.path.join(d, "plugins", "gil.lua")
    with open(gil) as f:
        text = f.read()
    edited = text.replace('id = "gil.handoff_churn", section = "4", severity = "warn"',
                          'id = "gil.handoff_churn", section = "4", severity = "high"', 1)
    t.check(edited != text, "the site edit applies to plugins/gil.lua")
    with open(gil, "w") as f:
        f.write(edited)
    code, out, err = sopctl("check", os.path.join(d, "rules.lua"), "--json")
    try:
        sev = [r["severity"] for r in json.loads(out)["rules"] if r["id"] == "gil.handoff_churn"]
    except (ValueError, KeyError, TypeError):
        sev = []
    t.check(code == 0 and sev == ["high"], "an edited plugin next to the rules file is the one loaded",
            (code, sev, err[-300:]))
    if os.geteuid() == 0:
        os.chmod(gil, 0o664)
        code, out, err = sopctl("check", os.path.join(d, "rules.lua"))
        t.check(code == 2 and "plugins/gil.lua" in err, "a group-writable plugin (as root): exit 2, named",
                (code, err))


t.done()
