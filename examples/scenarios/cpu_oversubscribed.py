# Three busy worker processes per CPU: they queue for the CPUs and each gets a third of a core
# (SOP §4.4, §8.5: N workers x M threads > cores).
# expect: cpu.oversubscribed
# verdict: CPU-bound
# sopctl: --duration 2
import multiprocessing as mp
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


def spin(deadline):
    x = 0
    while time.time() < deadline:
        x += 1


if __name__ == "__main__":
    deadline = time.time() + 60
    procs = [mp.Process(target=spin, args=(deadline,)) for _ in range(3 * INTENSITY * len(os.sched_getaffinity(0)))]
    for p in procs:
        p.start()
    time.sleep(1.5)
    print("ready", flush=True)
    for p in procs:
        p.join()
