# A job in a container with a CPU quota of half a core that wants a full one: the CFS quota
# throttles it most periods (SOP §8.5: K8s limits below what the job uses).
# expect: cpu.throttled
# verdict: CPU-bound
# cgroup: cpu=0.5
# sopctl: --duration 2
import time

# SOP_SCENARIO_INTENSITY not read: its size is the quota (cpu=0.5): one spinning thread already wants twice that.

deadline = time.time() + 60
time.sleep(0.5)
print("ready", flush=True)
x = 0
while time.time() < deadline:
    x += 1
