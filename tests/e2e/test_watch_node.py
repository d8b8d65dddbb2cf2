"""test_watch_node.py — `sopctl watch --node` (issue 39), the node agent, on this machine: five
podman containers (the host's root as an overlay rootfs, runc) and three host processes, all
Python. Every one is on /metrics within a round, each sample labelled with its pid and, in a
container, its container (and pod, namespace from CRI annotations); promtool finds the page
clean; a target that exits leaves by the next round and a new container joins; /report/PID and
/report/pod/NS/NAME answer on the Unix socket, the index lists the targets; SIGTERM ends it
(exit 0). The agent's own CPU is measured over the run (it diagnoses one target at a time) and
printed with the per-window cost. Skipped (77) without podman."""
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import sopt  # noqa: E402
from test_containers import LOOP, PY, podman, start  # noqa: E402

ANNOT = {"io.kubernetes.cri.sandbox-name": "trainer-0",
         "io.kubernetes.cri.sandbox-namespace": "ml",
         "io.kubernetes.cri.container-name": "torchrun"}
ROUND_WAIT = 60


def get(sock, path):
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(10)
            self.sock.connect(sock)

    c = Conn("localhost")
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read().decode()


def info_lines(body):
    """pid -> its sop_target_info line"""
    out = {}
    for ln in body.splitlines():
        m = re.match(r'sop_target_info\{.*pid="(\d+)"', ln)
        if m:
            out[int(m.group(1))] = ln
    return out


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_manifests(t):
    """deploy/kubernetes: the DaemonSet runs this command with SYS_PTRACE only, the PodMonitor
    selects its pods and scrapes the port it names."""
    try:
        import yaml
    except ImportError:
        print("skip manifests: no PyYAML")
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../deploy/kubernetes")
    with open(os.path.join(here, "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    with open(os.path.join(here, "podmonitor.yaml")) as f:
        pm = yaml.safe_load(f)
    spec = ds["spec"]["template"]["spec"]
    ctr = spec["containers"][0]
    sc = ctr["securityContext"]
    t.check(spec.get("hostPID") is True and sc["capabilities"] == {"drop": ["ALL"],
                                                                   "add": ["SYS_PTRACE"]}
            and sc.get("readOnlyRootFilesystem") is True and not sc.get("privileged"),
            "DaemonSet: hostPID, SYS_PTRACE only, read-only root, not privileged")
    vols = {v["name"]: v for v in spec["volumes"]}
    writable = [m for m in ctr["volumeMounts"] if not m.get("readOnly")]
    t.check(ctr["args"][:2] == ["watch", "--node"] and
            writable == [{"name": "state", "mountPath": "/run/sop"}] and
            "emptyDir" in vols["state"] and
            all("hostPath" in vols[m["name"]] for m in ctr["volumeMounts"] if m.get("readOnly")) and
            {"name": "SOP_HOST_ROOT", "value": "/host"} in ctr["env"],
            "DaemonSet: watch --node, every host mount read-only, the only writable one its own "
            "emptyDir /run/sop, SOP_HOST_ROOT")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    port = pm["spec"]["podMetricsEndpoints"][0]["port"]
    t.check(pm["spec"]["selector"]["matchLabels"].items() <= labels.items() and
            port in [p["name"] for p in ctr["ports"]],
            "PodMonitor selects the agent's pods and its metrics port")


def main():
    t = sopt.Checks()
    if not shutil.which("podman"):
        print("skip: podman not installed (scripts/install-deps.sh installs it)")
        sys.exit(77)
    tag = "sop-node-%d" % os.getpid()
    names = ["%s-%d" % (tag, i) for i in range(6)]
    work = tempfile.mkdtemp(prefix="sop-node-")
    os.chmod(work, 0o700)
    sock = os.path.join(work, "node.sock")
    hosts, agent = [], None
    try:
        try:
            ctrs = {}
            for i, n in enumerate(names[:5]):
                pid, cid, _ = start(n, [PY, "-c", LOOP], ANNOT if i == 0 else None)
                ctrs[n] = (pid, cid)
        except RuntimeError as e:
            print("skip: podman cannot run a container here: %s" % e)
            sys.exit(77)
        for _ in range(3):
            hosts.append(sopt.Target(LOOP.replace("import time\n", "import time\nprint('ready', "
                                                   "flush=True)\n", 1), timeout=60))
        want = {p: n for n, (p, _) in ctrs.items()}
        want.update({h.pid: None for h in hosts})

        t0 = time.monotonic()
        agent = subprocess.Popen([sopt.SOPCTL, "watch", "--node", "--every", "1", "--duration",
                                  "0.2", "--rate", "50", "--listen", "unix:" + sock],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        body, deadline = "", time.time() + ROUND_WAIT
        while time.time() < deadline:
            time.sleep(0.3)
            try:
                _, body = get(sock, "/metrics")
            except OSError:
                continue
            if set(want) <= set(info_lines(body)):
                break
        seen = info_lines(body)
        t.check(set(want) <= set(seen), "all 8 targets (5 containers, 3 host processes) on /metrics",
                "missing %s" % sorted(set(want) - set(seen)))
        for pid, name in want.items():
            ln = seen.get(pid, "")
            if name:
                ok = ('container="%s"' % name) in ln or 'container="torchrun"' in ln
            else:
                ok = ln and "container=" not in ln
            t.check(ok, "pid %d labelled %s" % (pid, "container " + name if name else "(host)"), ln)
        first = ctrs[names[0]][0]
        t.check('pod="trainer-0"' in seen.get(first, "") and 'namespace="ml"' in seen.get(first, "")
                and 'container="torchrun"' in seen.get(first, ""),
                "the annotated container: pod, namespace, container as dcgm-exporter spells them",
                seen.get(first))
        hits = [ln for ln in body.splitlines() if ln.startswith("sop_rule_hit{")]
        t.check(hits and all('pid="' in ln for ln in hits),
                "every target's samples carry its pid (sop_rule_hit)", hits[:3])
        if shutil.which("promtool"):
            r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                               text=True)
            t.check(r.returncode == 0, "promtool check metrics: clean", r.stdout + r.stderr)

        code, rep = get(sock, "/report/%d" % hosts[0].pid)
        t.check(code == 200 and '"pid":\t%d' % hosts[0].pid in rep.replace(": ", ":\t"),
                "/report/PID: the target's last JSON report", rep[:300])
        code, rep = get(sock, "/report/pod/ml/trainer-0")
        t.check(code == 200 and "trainer-0" in rep, "/report/pod/NS/NAME", rep[:300])
        code, page = get(sock, "/")
        t.check(code == 200 and names[0] in page and "ml/trainer-0" in page and
                str(hosts[1].pid) in page, "the index lists the targets", page[:600])

        # a target exits, a new one comes: by the next rounds
        gone = hosts.pop()
        gone.stop()
        pid6, _, _ = start(names[5], [PY, "-c", LOOP])
        deadline = time.time() + ROUND_WAIT
        while time.time() < deadline:
            time.sleep(0.3)
            seen = info_lines(get(sock, "/metrics")[1])
            if gone.pid not in seen and pid6 in seen:
                break
        t.check(gone.pid not in seen, "an exited target leaves /metrics")
        t.check(pid6 in seen and names[5] in seen.get(pid6, ""), "a new container joins",
                seen.get(pid6))

        # the agent's own cost: one window at a time, measured
        cpu = cpu_s(agent.pid)
        wall = time.monotonic() - t0
        m = re.search(r"sop_node_rounds_total (\d+)", get(sock, "/metrics")[1])
        rounds = int(m.group(1)) if m else 0
        windows = max(1, rounds * len(want))
        print("agent: %.2f s CPU over %.1f s (%.0f%% of one CPU), %d rounds of ~%d targets: "
              "%.1f ms CPU per 0.2 s window at 50 Hz" % (cpu, wall, 100 * cpu / wall, rounds,
                                                         len(want), 1000 * cpu / windows))
        t.check(cpu / wall < 0.5, "the agent used under half a CPU while it diagnosed back to "
                "back (%.0f%%)" % (100 * cpu / wall))
        # --containers-only: the containers' processes join, the host's do not
        r = subprocess.run([sopt.SOPCTL, "watch", "--node", "--containers-only", "--count", "1",
                            "--duration", "0.1", "--rate", "0"], capture_output=True, text=True,
                           timeout=120)
        joined = {int(x) for x in re.findall(r"target pid (\d+)", r.stderr)}
        live = {p for p, _ in ctrs.values()} | {pid6}
        t.check(r.returncode == 0 and live <= joined and not joined & {h.pid for h in hosts},
                "--containers-only: the %d containers' processes, none of the host's" % len(live),
                r.stderr[-1500:])
        check_manifests(t)
        agent.send_signal(signal.SIGTERM)
        rc = agent.wait(timeout=30)
        t.check(rc == 0, "SIGTERM: exit 0", agent.stderr.read()[-1500:])
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.wait()
        for h in hosts:
            h.stop()
        for n in names:
            podman("rm", "-f", "-t", "0", n)
        shutil.rmtree(work, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
