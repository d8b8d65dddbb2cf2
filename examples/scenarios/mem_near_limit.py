# expect: mem.near_limit
# cgroup: memory=300M
"""mem_near_limit.py — SOP §2.2: a job holding ~270 MiB of written memory under a 300 MiB
memory cgroup limit (over 90% of it), then idling: the next allocation burst gets it killed."""
import time

# SOP_SCENARIO_INTENSITY not read: its size is the share of its 300 MiB cgroup limit (90%), not an amount.

held = [bytearray(b"\x01") * (1 << 20) for _ in range(270)]  # written, so resident
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < 60:
    time.sleep(0.2)
