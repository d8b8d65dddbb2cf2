# expect: mem.growth
# cgroup: memory=1000M
# sopctl: --duration 3
"""mem_growth.py — SOP §2.2 ("grows the longer it runs"): a serving-style loop that caches every
response in an unbounded dict, ~15 MiB/s of new resident memory; it stops at ~700 MiB (bounded
scenario) and exits after 60 s."""
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

cache = {}
t0 = time.time()
i = 0
printed = False
while time.time() - t0 < 60:
    if len(cache) < 2800:  # 2800 x 256 KiB = 700 MiB at most (x intensity)
        cache["request-%d" % i] = bytearray(b"\x01") * (256 << 10) * INTENSITY  # written, so resident
        i += 1
    if not printed and time.time() - t0 > 2:
        print("ready", flush=True)
        printed = True
    time.sleep(1 / 60)  # ~60 responses/s = 15 MiB/s
