# expect: mem.growth
# cgroup: memory=3000M
# sopctl: --duration 3
"""mem_growth_small_cache.py — SOP §2.2 ("grows the longer it runs") in a small, young process:
a lookup service memoises every result in a module-level dict that nothing ever evicts, about
6.4 MiB/s (+40% or more over a 3 s window while the process is still tens of MiB). A leak is a
rate and a trend, not a size: steady over the window, it reaches the 3000 MiB limit in about
eight minutes, so mem.growth is high although the process is small (a young process far from any
limit would be info: a cache filling at start-up looks the same in one window). The program
reports ready once it has measured its own anonymous memory growing. Stops growing at ~380 MiB;
exits after 60 s."""
import hashlib
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

_memo = {}


def anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def lookup(key):
    if key not in _memo:  # the memo is never evicted
        digest = hashlib.sha256(key.encode()).digest()
        _memo[key] = bytes(digest) * (2048 * INTENSITY)  # 64 KiB per result (x intensity)
    return _memo[key]


t0 = time.time()
a0 = anon_kb()
i = 0
ready = False
while time.time() - t0 < 60:
    if len(_memo) < 6000:
        lookup("user-%d" % i)
        i += 1
    if not ready and anon_kb() - a0 >= 16 << 10:  # measured: 16 MiB more than at start
        print("ready", flush=True)
        ready = True
    time.sleep(0.01)  # ~100 lookups/s = 6.4 MiB/s
