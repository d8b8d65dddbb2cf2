# Healthy: a few short subprocesses a second, each waited for (subprocess.run, communicate()): no
# zombie stays, nothing grows; no rule may warn. (Written blind to the rules.)
# expect: none
# sopctl: --duration 2
# HEALTHY control: a preprocessing driver that shells out to small helpers
# (`true` / `echo` / `wc`) a few times per second and always reaps them via
# subprocess.run / Popen.communicate, doing light hashing work in between.
# Zombie count stays ~0, child count stays at most 1.
import hashlib
import os
import subprocess
import sys
import time


def count_zombies(ppid):
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == ppid:
            n += 1
    return n


def main():
    t0 = time.time()
    runs = 0
    reported = False
    printed = False
    h = hashlib.blake2b()
    while True:
        if runs % 2 == 0:
            r = subprocess.run(["echo", f"batch-{runs}"], capture_output=True, check=True)
            h.update(r.stdout)
        else:
            p = subprocess.Popen(["wc", "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            out, _ = p.communicate(os.urandom(2048))
            h.update(out)
        runs += 1
        for _ in range(200):            # light work between calls
            h.update(b"x" * 256)
        if not printed:
            print("ready", flush=True)
            printed = True
        if not reported and time.time() - t0 >= 3:
            print(f"[self-check] t={time.time() - t0:.1f}s subprocess_runs={runs} "
                  f"zombies={count_zombies(os.getpid())}", file=sys.stderr, flush=True)
            reported = True
        time.sleep(0.25)


if __name__ == "__main__":
    main()
