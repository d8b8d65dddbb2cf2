"""test_containers.py — containers by name (issue 39): real podman containers (the host's root as
an overlay rootfs, runc) holding Python processes. The evidence's `container` names the runtime,
the id and the container's name; a container started with Kubernetes' CRI annotations in its OCI
config (podman --annotation writes them there as a kubelet's runtime does) names its pod,
namespace and container; reports and /metrics carry them; `--container NAME|ID` and
`--pod NAMESPACE/NAME` select the target (the only Python process, else the top one of a
launcher and its workers, else an error listing the candidates). A host process has no
`container`. Skipped (77) without podman."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import sopt  # noqa: E402

PY = "/usr/bin/python3"
LOOP = "import time\nwhile True:\n    sum(range(20000)); time.sleep(0.01)\n"
LAUNCHER = ("import subprocess, sys, time\n"
            "w = subprocess.Popen([sys.executable, '-c', %r])\n"
            "while True:\n    time.sleep(0.05)\n" % LOOP)
ANNOT = {"io.kubernetes.cri.sandbox-name": "web-0",
         "io.kubernetes.cri.sandbox-namespace": "serving",
         "io.kubernetes.cri.container-name": "server",
         "io.kubernetes.cri.sandbox-uid": "5f1c2b8e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"}


def podman(*args, timeout=120):
    return subprocess.run(["podman", "--runtime", "runc"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def is_python(pid):
    try:
        return os.path.basename(os.readlink("/proc/%d/exe" % pid)).startswith("python")
    except OSError:
        return False


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in os.listdir("/proc/%d/task" % p) if os.path.isdir("/proc/%d" % p) else []:
            try:
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                kids = []
            out += kids
            todo += kids
    return out


def start(name, argv, annotations=None, pythons=1):
    """A detached container; -> (its init pid, its id, the Python pids) once they run."""
    extra = []
    for k, v in (annotations or {}).items():
        extra += ["--annotation", "%s=%s" % (k, v)]
    r = podman("run", "-d", "--name", name, "--network", "none", "--ulimit", "nofile=4096:4096",
               "--ulimit", "nproc=4096:4096", *extra, "--rootfs", "/:O", *argv)
    if r.returncode != 0:
        raise RuntimeError("podman run %s: %s" % (name, r.stderr[-1500:]))
    cid = r.stdout.strip().splitlines()[-1]
    deadline = time.time() + 60
    while time.time() < deadline:
        pid = podman("inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
        if pid.isdigit() and int(pid) > 0:
            pids = [p for p in [int(pid)] + descendants(int(pid)) if is_python(p)]
            if len(pids) >= pythons:
                time.sleep(0.3)
                return int(pid), cid, sorted(pids)
        time.sleep(0.1)
    raise RuntimeError("container %s: its Python processes did not start" % name)


def metrics_over_unix(sock):
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(10)
            self.sock.connect(sock)

    c = Conn("localhost")
    c.request("GET", "/metrics")
    r = c.getresponse()
    return r.status, r.read().decode()


def main():
    t = sopt.Checks()
    if not shutil.which("podman"):
        print("skip: podman not installed (scripts/install-deps.sh installs it)")
        sys.exit(77)
    tag = "sop-ctr-%d" % os.getpid()
    names = {k: "%s-%s" % (tag, k) for k in ("plain", "pod", "two")}
    work = tempfile.mkdtemp(prefix="sop-ctr-")
    try:
        try:
            p_plain, id_plain, _ = start(names["plain"], [PY, "-c", LOOP])
            p_pod, id_pod, pod_pys = start(names["pod"], [PY, "-c", LAUNCHER], ANNOT, pythons=2)
            _, _, two_pys = start(names["two"], ["sh", "-c", "%s -c '%s' & %s -c '%s' & wait" % (
                PY, "import time\nwhile True: time.sleep(1)", PY,
                "import time\nwhile True: time.sleep(1)")], pythons=2)
        except RuntimeError as e:
            if "rootfs" in str(e) or "overlay" in str(e) or "runc" in str(e):
                print("skip: podman cannot run a container here: %s" % e)
                sys.exit(77)
            raise

        # the evidence of a process in a container
        code, out, err = sopt.sopctl("evidence", "--pid", p_plain, "--duration", "0")
        ev = json.loads(out) if code == 0 else {}
        ct = ev.get("container", {})
        t.check(ct.get("runtime") == "podman" and ct.get("id") == id_plain and
                ct.get("name") == names["plain"] and not ct.get("pod"),
                "evidence: container runtime podman, its id and name %s" % names["plain"],
                "%s %s" % (ct, err[-500:]))
        code, out, err = sopt.sopctl("evidence", "--pid", p_pod, "--duration", "0")
        ct = json.loads(out).get("container", {}) if code == 0 else {}
        t.check(ct.get("name") == names["pod"] and ct.get("pod") == "web-0" and
                ct.get("namespace") == "serving" and ct.get("container") == "server" and
                ct.get("pod_uid") == ANNOT["io.kubernetes.cri.sandbox-uid"],
                "evidence: CRI annotations give pod web-0, namespace serving, container server",
                "%s %s" % (ct, err[-500:]))
        with sopt.Target("print('ready', flush=True)\nimport time\ntime.sleep(60)") as host:
            code, out, err = sopt.sopctl("evidence", "--pid", host.pid, "--duration", "0")
            t.check(code == 0 and "container" not in json.loads(out),
                    "evidence: a host process has no container", err[-500:])

        # --container by name, by id, by a 12-digit prefix; --pod
        for sel, want in ((["--container", names["plain"]], p_plain),
                          (["--container=" + id_plain], p_plain),
                          (["--container", id_plain[:12]], p_plain),
                          (["--pod", "serving/web-0"], min(pod_pys)),
                          (["--container", "server"], min(pod_pys))):
            code, rep, err = sopt.run_json(*sel, "--duration", "0")
            got = (rep or {}).get("target", {})
            t.check(code in (0, 1) and got.get("pid") == want,
                    "run %s picks pid %d (%s)" % (" ".join(sel), want,
                                                  "the launcher, not its worker"
                                                  if want == min(pod_pys) else "its one process"),
                    "exit %d target %s %s" % (code, got, err[-800:]))
        code, rep, err = sopt.run_json("--pod", "serving/web-0", "--duration", "0")
        tc = (rep or {}).get("target", {}).get("container", {})
        t.check(tc.get("pod") == "web-0" and tc.get("namespace") == "serving" and
                tc.get("name") == names["pod"] and tc.get("runtime") == "podman",
                "report: target.container names the pod and the container", tc)
        code, out, err = sopt.sopctl("run", "--container", names["pod"], "--duration", "0",
                                     "--format", "md")
        t.check(("container %s (podman %s)" % (names["pod"], id_pod[:12])) in out and
                "pod serving/web-0, container server" in out,
                "Markdown report: the container line", out[:1500])
        # merge: each rank's row names its container and pod
        paths = []
        for sel in (["--container", names["plain"]], ["--pod", "serving/web-0"]):
            path = os.path.join(work, "r%d.json" % len(paths))
            code, out, err = sopt.sopctl("run", *sel, "--duration", "0", "--format", "json")
            with open(path, "w") as f:
                f.write(out)
            paths.append(path)
        code, out, err = sopt.sopctl("merge", "--format", "json", *paths)
        try:
            rows = json.loads(out).get("ranks", [])
        except ValueError:
            rows = []
        t.check(any(r.get("container") == names["plain"] for r in rows) and
                any(r.get("pod") == "serving/web-0" for r in rows),
                "merge: each rank's row carries its container and pod", out[:1500] + err[-500:])
        code, out, err = sopt.sopctl("dump", "--container", names["plain"])
        t.check(code == 0 and "<module>" in out, "dump --container", out[:500] + err[-500:])

        # several top-level Python processes: the candidates, exit 2; none: exit 3
        code, out, err = sopt.sopctl("run", "--container", names["two"], "--duration", "0")
        t.check(code == 2 and all(str(p) in err for p in two_pys) and "--pid" in err,
                "two top-level Python processes: exit 2 listing pids %s" % two_pys,
                "exit %d: %s" % (code, err[-800:]))
        code, out, err = sopt.sopctl("run", "--container", tag + "-nosuch", "--duration", "0")
        t.check(code == 3 and "no process" in err, "an unknown container: exit 3",
                "exit %d: %s" % (code, err[-500:]))
        code, out, err = sopt.sopctl("run", "--pod", "web-0", "--duration", "0")
        t.check(code == 2 and "NAMESPACE/NAME" in err, "--pod without a namespace: exit 2", err)
        code, out, err = sopt.sopctl("run", "--container", names["plain"], "--pid", "1")
        t.check(code == 2 and "one target" in err, "--container with --pid: exit 2", err)

        # /metrics: the target's labels as dcgm-exporter spells them
        sock = os.path.join(work, "w.sock")
        w = subprocess.Popen([sopt.SOPCTL, "watch", "--pod", "serving/web-0", "--duration", "0.2",
                              "--every", "0.5", "--rate", "0", "--listen", "unix:" + sock],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            body, deadline = "", time.time() + 30
            while time.time() < deadline and "sop_target_info" not in body:
                time.sleep(0.2)
                try:
                    _, body = metrics_over_unix(sock)
                except OSError:
                    pass
            info = [ln for ln in body.splitlines() if ln.startswith("sop_target_info{")]
            t.check(info and 'pod="web-0"' in info[0] and 'namespace="serving"' in info[0] and
                    'container="server"' in info[0] and ('container_id="%s"' % id_pod) in info[0],
                    "/metrics: sop_target_info carries pod, namespace, container, container_id",
                    info or body[-800:])
            if shutil.which("promtool"):
                r = subprocess.run(["promtool", "check", "metrics"], input=body,
                                   capture_output=True, text=True)
                t.check(r.returncode == 0, "promtool check metrics", r.stdout + r.stderr)
        finally:
            w.terminate()
            w.wait(timeout=30)
    finally:
        for n in names.values():
            podman("rm", "-f", "-t", "0", n)
        shutil.rmtree(work, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
