# expect: mem.growth
# cgroup: memory=1000M
# sopctl: --duration 3 --heap
"""mem_growth_cache_class.py — SOP §2.2 ("grows the longer it runs"), the leak named: a service
keeps every Response object (with its 128 KiB payload) in an unbounded dict, ~8 MiB/s; the
heap census (`--heap`) names __main__.Response among the types that grew and says Python
objects explain the growth. Stops growing at ~400 MiB; exits after 60 s."""
import time

# SOP_SCENARIO_INTENSITY not read: the growth rate is what the rule measures, and its 1000 MiB cgroup bounds the run.


class Response:
    def __init__(self, i):
        self.request_id = "request-%d" % i
        self.payload = bytearray(b"\x01") * (128 << 10)  # written, so resident


cache = {}
t0 = time.time()
i = 0
printed = False
while time.time() - t0 < 60:
    if len(cache) < 3200:  # 3200 x 128 KiB = 400 MiB at most
        cache[i] = Response(i)
        i += 1
    if not printed and time.time() - t0 > 2:
        print("ready", flush=True)
        printed = True
    time.sleep(1 / 60)  # ~60 responses/s = 7.5 MiB/s
