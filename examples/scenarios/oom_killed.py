# expect: oom.killed
# target: dead
# cgroup: memory=150M
# timeout: 60
"""oom_killed.py — SOP §2.1: a job that allocates (and writes) memory until the kernel OOM-kills
it inside a 150 MiB memory cgroup; sopctl diagnoses the dead pid from the kernel log."""
import time

# SOP_SCENARIO_INTENSITY not read: it allocates until its 150 MiB cgroup kills it, whatever the size.

with open("/proc/self/oom_score_adj", "w") as f:
    f.write("1000")  # be the victim, whatever else lives in the cgroup
print("allocating", flush=True)
chunks = []
for _ in range(512):  # 4 GiB at most: bounded even without a limit
    chunks.append(b"\x01" * (8 << 20))  # written, so resident
    time.sleep(0.01)
