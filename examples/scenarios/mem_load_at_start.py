# expect: mem.load_at_start
# cgroup: memory=1300M
# sopctl: --duration 2
"""mem_load_at_start.py — SOP §2.2 ("killed right after start"): a training script that reads its
whole dataset (12 JSON shards, ~950 MiB of Python objects) into RAM before the first step, under
a 1300 MiB memory limit. Readiness is measured, not timed: "ready" comes once the program's own
anonymous memory holds 45% of its memory limit (the rule's 40% plus a margin). Loading then goes
on for LOAD_AFTER_S of wall time (a second pass over the shards keeps every 16th record, and
stops keeping any at 80% of the limit), so the window sees both the share and the loading at any
machine speed and with a cold page cache (the first pass alone took 1.2 s here once the cache was
dropped, and left the 2 s window mostly asleep)."""
import json
import os
import shutil
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

SHARDS, ROWS = 12 * INTENSITY, 200_000 // INTENSITY  # the same data in more, smaller shards
READY_SHARE = 0.45  # of the memory limit, measured
KEEP_SHARE = 0.80  # the second pass keeps records only below this share of the limit
LOAD_AFTER_S = 8.0  # loading goes on this long after "ready": longer than any window


def memory_limit_kb():
    """This process's cgroup v2 memory.max (kB); the header's 1300 MiB when unreadable or 'max'."""
    try:
        with open("/proc/self/cgroup") as f:
            path = [ln.split(":", 2)[2].strip() for ln in f if ln.startswith("0::")][0]
        with open("/sys/fs/cgroup" + path + "/memory.max") as f:
            return int(f.read()) // 1024
    except (OSError, IndexError, ValueError):
        return 1300 << 10


def anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def main():
    d = tempfile.mkdtemp(prefix="sop-load-")
    try:
        text = "[" + ",".join('{"id": %d, "text": "sample text number %d", "label": %d, '
                              '"score": %d.5}' % (i, i, i % 7, i) for i in range(ROWS)) + "]"
        paths = []
        for k in range(SHARDS):
            paths.append(os.path.join(d, "shard-%02d.json" % k))
            with open(paths[-1], "w") as f:
                f.write(text)
        del text
        dataset = []
        limit, ready = memory_limit_kb(), False
        for p in paths:
            with open(p) as f:
                dataset.extend(json.load(f))  # the whole shard, as Python objects
            if not ready and anon_kb() >= READY_SHARE * limit:  # measured phase: loaded enough
                print("ready", flush=True)
                ready = True
        if not ready:
            print("ready", flush=True)  # a limit far above the data: report, the rule will clear
        t0, k = time.time(), 0
        while time.time() - t0 < LOAD_AFTER_S:  # the second pass: still loading, memory still rising
            with open(paths[k % len(paths)]) as f:
                rows = json.load(f)
            if anon_kb() < KEEP_SHARE * limit:
                dataset.extend(rows[::16])
            del rows
            k += 1
        t0 = time.time()
        while time.time() - t0 < 20:  # "training"
            time.sleep(0.2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
