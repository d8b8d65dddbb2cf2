# A worker launches a short helper command with subprocess.Popen many times a second and keeps the
# handles without ever waiting for them: every exited child stays a zombie (SOP §6 "DataLoader
# zombie processes", §9: is something piling up?). (Written blind to the rules.)
# expect: progress.zombies
# sopctl: --duration 2
# Checkpoint uploader: for each shard it spawns a tiny helper ("true" stands in
# for a checksum/upload CLI) with subprocess.Popen and moves on.
# BUG: the Popen handles are kept in a list "for later" but nobody ever calls
# wait()/poll(), so every exited child stays a zombie (<defunct>). ~20/s.
# Symptom: `ps -o stat --ppid PID` shows a growing pile of Z entries.
import hashlib
import os
import subprocess
import sys
import time

MAX_CHILDREN = 1200      # cap for the harness; then keep "working" without spawning
SPAWN_RATE = 20

inflight = []            # kept alive on purpose -> Popen.__del__ never reaps them


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
    shard = 0
    printed_ready = reported = False
    digest = hashlib.sha256()
    while True:
        if len(inflight) < MAX_CHILDREN:
            p = subprocess.Popen(["true", f"shard-{shard:05d}"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            inflight.append(p)
            shard += 1
        digest.update(os.urandom(4096))     # the parent keeps doing real work
        if not printed_ready and shard >= 5:
            print("ready", flush=True)
            printed_ready = True
        if not reported and time.time() - t0 >= 3:
            print(f"[self-check] t={time.time() - t0:.1f}s spawned={shard} "
                  f"zombies={count_zombies(os.getpid())}", file=sys.stderr, flush=True)
            reported = True
        time.sleep(1.0 / SPAWN_RATE)


if __name__ == "__main__":
    main()
