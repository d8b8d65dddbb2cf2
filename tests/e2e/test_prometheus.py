"""test_prometheus.py — sop's series in a real Prometheus (Debian's `prometheus`, installed by
scripts/install-deps.sh): `sopctl watch --listen 127.0.0.1:0` beside a misbehaving scenario
(examples/scenarios/cpu_affinity_mismatch.py) and a healthy one (healthy_idle_server.py);
this test starts Prometheus on loopback with a temporary config (and the shipped alerting
rules) on a free port, and polls its HTTP API until sop_rule_hit{rule="cpu.affinity_mismatch"}
is 1 for the first and 0 for the second. It starts and stops every process itself, by PID.
Every wait is a deadline for polling (generous, and extended while progress is being made),
never a threshold."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from sopt import PY, SOPCTL, Checks

t = Checks()
SRC = os.environ.get("SOP_SRC") or os.path.join(os.path.dirname(__file__), "../..")
SCEN = os.path.join(SRC, "examples/scenarios")
RULE = "cpu.affinity_mismatch"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
started = []  # every process this test started, ended by PID at the end


def start(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    started.append(p)
    return p


def stop_all():
    for p in reversed(started):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(started):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


POOL_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")


def scenario(name, env_extra):
    # The rule reads these: only the misbehaving scenario gets them, whatever ours hold.
    env = {k: v for k, v in os.environ.items() if k not in POOL_VARS}
    env.update(env_extra)
    p = start([PY, "-u", os.path.join(SCEN, name)], stdout=subprocess.PIPE,
              stderr=subprocess.DEVNULL, env=env, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line or line.startswith("ready"):
            break
    return p


def watch(pid, logdir, tag):
    log = os.path.join(logdir, "watch-%s.log" % tag)
    p = start([SOPCTL, "watch", "--no-site", "--pid", str(pid), "--every", "2", "--duration", "1",
               "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        for line in open(log):
            if "listening on http://" in line:
                return p, log, line.split("http://")[1].split("/")[0]
        time.sleep(0.05)
    return p, log, None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
    except (OSError, ValueError):
        return None
    if doc.get("status") != "success":
        return None
    return {res["metric"].get("instance"): res["value"][1] for res in doc["data"]["result"]}


if not os.path.exists(PROMETHEUS):
    t.check(False, "prometheus is installed (scripts/install-deps.sh)")
    t.done()

d = tempfile.mkdtemp(prefix="sop-prom-")
try:
    bad = scenario("cpu_affinity_mismatch.py",
                   {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "4"})
    good = scenario("healthy_idle_server.py", {})
    wb, logb, addr_bad = watch(bad.pid, d, "bad")
    wg, logg, addr_good = watch(good.pid, d, "good")
    t.check(addr_bad and addr_good, "both watches listen", (open(logb).read(), open(logg).read()))

    rules = os.path.join(d, "sop-alerts.yml")
    shutil.copy(os.path.join(SRC, "examples/prometheus/sop-alerts.yml"), rules)
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "rule_files: [%s]\n"
                "scrape_configs:\n"
                "  - job_name: sop\n"
                "    static_configs: [{targets: ['%s', '%s']}]\n" % (rules, addr_bad, addr_good))
    prom = None
    for attempt in range(3):  # a free port can be taken between asking and binding
        port = free_port()
        plog = open(os.path.join(d, "prometheus-%d.log" % attempt), "w")
        prom = start([PROMETHEUS, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(d, "tsdb%d" % attempt),
                      "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                     stdout=plog, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and prom.poll() is None and query(port, "up") is None:
            time.sleep(0.2)
        if prom.poll() is None and query(port, "up") is not None:
            break
    t.check(prom and prom.poll() is None, "prometheus runs on 127.0.0.1:%d" % port,
            open(plog.name).read()[-2000:])

    # Poll until both series have the value the scenario calls for. The deadline moves on while
    # windows keep completing (a loaded machine is slow, not wrong); a fixed ceiling bounds it.
    want = {addr_bad: "1", addr_good: "0"}
    got = {}
    ceiling = time.time() + 300
    deadline = time.time() + 90
    seen = 0
    q = 'sop_rule_hit{rule="%s"}' % RULE
    while time.time() < min(deadline, ceiling):
        got = query(port, q) or {}
        if all(got.get(k) == v for k, v in want.items()):
            break
        n = sum(open(x).read().count(" window #") for x in (logb, logg))
        if n > seen:
            seen, deadline = n, max(deadline, time.time() + 30)
        if wb.poll() is not None or wg.poll() is not None or prom.poll() is not None:
            break
        time.sleep(0.5)
    t.check(got.get(addr_bad) == "1", "prometheus: %s is 1 for the misbehaving scenario" % q,
            (got, open(logb).read()[-1500:]))
    t.check(got.get(addr_good) == "0", "prometheus: %s is 0 for the healthy one" % q,
            (got, open(logg).read()[-1500:]))
    up = query(port, 'up{job="sop"}') or {}
    t.check(up.get(addr_bad) == "1" and up.get(addr_good) == "1", "both scrapes are up", up)
    ts = query(port, "sop_last_window_timestamp_seconds") or {}
    t.check(all(float(ts.get(a, 0)) > time.time() - 3600 for a in (addr_bad, addr_good)),
            "the last window's timestamp is recent", ts)
    rules_ok = None
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/rules" % port, timeout=10) as r:
            names = [rule["name"] for g in json.load(r)["data"]["groups"] for rule in g["rules"]]
            rules_ok = "SopHighFinding" in names and "SopWarnFinding" in names
    except (OSError, ValueError, KeyError) as e:
        names = str(e)
    t.check(rules_ok, "prometheus loaded the shipped alerting rules", names)
finally:
    stop_all()
    shutil.rmtree(d, ignore_errors=True)
t.done()
