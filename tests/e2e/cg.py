"""cg.py — test cgroups for the end-to-end tests: create one (v1: per controller, under the
caller's own cgroup; v2: under the cgroup2 root with the controllers enabled in
subtree_control), set a memory limit and/or a CPU quota, start processes inside it, and always
clean up (a cpuset, too: `cpuset_cpus="0"` confines the members to CPU 0): SIGKILL every member (all of them were started by the test), then rmdir. Stdlib only."""
import os
import signal
import subprocess
import time

def _mounts():
    """[(mount point, fstype, super options)] from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) >= 5 and len(rfields) >= 3:
                out.append((fields[4], rfields[0], rfields[2].split(",")))
    return out


def _own_v1_paths():
    """controller -> own cgroup path, from /proc/self/cgroup (v1 lines only)."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            num, ctrls, path = line.rstrip("\n").split(":", 2)
            if num != "0":
                for c in ctrls.split(","):
                    paths[c] = path
    return paths


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def layout(controllers):
    """('v1', {ctrl: mountpoint}) or ('v2', root) for the wanted controllers, or raise."""
    mounts = _mounts()
    v1 = {}
    for mnt, fstype, opts in mounts:
        if fstype == "cgroup":
            for c in controllers:
                if c in opts:
                    v1[c] = mnt
    if len(v1) == len(controllers):
        return "v1", v1
    for mnt, fstype, _ in mounts:
        if fstype == "cgroup2":
            avail = _read(os.path.join(mnt, "cgroup.controllers")).split()
            if all(c in avail for c in controllers):
                return "v2", mnt
    raise RuntimeError("no cgroup hierarchy has the controllers %s" % ",".join(controllers))


class TestCgroup:
    """with TestCgroup("oom", memory_max_bytes=100 << 20) as cg: p = cg.popen([...])"""

    def __init__(self, tag, memory_max_bytes=None, cpu_quota_cpus=None, period_us=100000,
                 cpuset_cpus=None):
        controllers = (["memory"] + (["cpu"] if cpu_quota_cpus is not None else [])
                       + (["cpuset"] if cpuset_cpus is not None else []))
        self.version, where = layout(controllers)
        self.name = "sop-e2e-%s-%d" % (tag, os.getpid())
        self.dirs = []  # one per controller on v1, one on v2
        self.root = where["memory"] if self.version == "v1" else where
        self.procs = []
        try:
            if self.version == "v1":
                own = _own_v1_paths()
                for c in controllers:
                    d = os.path.join(where[c] + own.get(c, "/"), self.name)
                    os.mkdir(d)
                    self.dirs.append(d)
                mem = self.dirs[0]
                if memory_max_bytes is not None:
                    _write(os.path.join(mem, "memory.limit_in_bytes"), str(memory_max_bytes))
                    sw = os.path.join(mem, "memory.memsw.limit_in_bytes")
                    if os.path.exists(sw):
                        _write(sw, str(memory_max_bytes))  # no swapping around the limit
                if cpu_quota_cpus is not None:
                    cpu = self.dirs[1]
                    _write(os.path.join(cpu, "cpu.cfs_period_us"), str(period_us))
                    _write(os.path.join(cpu, "cpu.cfs_quota_us"), str(int(cpu_quota_cpus * period_us)))
                    # A heavy weight, so the quota and not other load on the machine is the limit.
                    _write(os.path.join(cpu, "cpu.shares"), "8192")
                if cpuset_cpus is not None:
                    cs = self.dirs[controllers.index("cpuset")]
                    parent = os.path.dirname(cs)
                    # v1 cpusets start empty: memory nodes from the parent, then the CPUs.
                    _write(os.path.join(cs, "cpuset.mems"), _read(os.path.join(parent, "cpuset.mems")).strip())
                    _write(os.path.join(cs, "cpuset.cpus"), cpuset_cpus)
            else:
                enabled = _read(os.path.join(where, "cgroup.subtree_control")).split()
                want = " ".join("+" + c for c in controllers if c not in enabled)
                if want:
                    _write(os.path.join(where, "cgroup.subtree_control"), want)
                d = os.path.join(where, self.name)
                os.mkdir(d)
                self.dirs.append(d)
                if memory_max_bytes is not None:
                    _write(os.path.join(d, "memory.max"), str(memory_max_bytes))
                    if os.path.exists(os.path.join(d, "memory.swap.max")):
                        _write(os.path.join(d, "memory.swap.max"), "0")
                if cpu_quota_cpus is not None:
                    _write(os.path.join(d, "cpu.max"), "%d %d" % (int(cpu_quota_cpus * period_us), period_us))
                    _write(os.path.join(d, "cpu.weight"), "800")
                if cpuset_cpus is not None:
                    _write(os.path.join(d, "cpuset.cpus"), cpuset_cpus)
        except BaseException:
            self.close()
            raise

    @property
    def path(self):
        """The cgroup path as /proc/PID/cgroup names it (memory controller on v1)."""
        return self.dirs[0][len(self.root.rstrip("/")):]

    def add(self, pid):
        for d in self.dirs:
            _write(os.path.join(d, "cgroup.procs"), str(pid))

    def popen(self, argv, **kw):
        """Start argv inside the cgroup (it joins before exec, so all it forks is inside too)."""
        dirs = list(self.dirs)

        def join():
            for d in dirs:
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))

        p = subprocess.Popen(argv, preexec_fn=join, **kw)
        self.procs.append(p)
        return p

    def members(self):
        pids = set()
        for d in self.dirs:
            for tok in _read(os.path.join(d, "cgroup.procs")).split():
                pids.add(int(tok))
        return sorted(pids)

    def close(self):
        """Kill every member (all started by this test), reap our children, remove the dirs."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = self.members()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for d in reversed(self.dirs):
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.dirs = [d for d in self.dirs if os.path.isdir(d)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
