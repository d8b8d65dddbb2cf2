"""work_oom.py — e2e workload: a parent forks one worker that allocates (and touches) memory
until the kernel OOM-kills it inside the memory cgroup the test put us in; the parent, small,
survives, reports the victim and stays up. Stdlib only.

    python3 work_oom.py [--seconds 60]
prints "worker pid=W" then "killed pid=W signal=9" (or "exited pid=W status=S"), then sleeps."""
import argparse
import os
import sys
import time


def worker():
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")  # be the victim, whatever else lives in the cgroup
    chunks = []
    for _ in range(4096):  # 32 GiB at most: bounded even without a limit
        chunks.append(b"\x01" * (8 << 20))  # written, so resident
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    time.sleep(0.3)  # let the parent's start time and the kill be clearly apart
    pid = os.fork()
    if pid == 0:
        worker()
    print("worker pid=%d" % pid, flush=True)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print("killed pid=%d signal=%d" % (pid, os.WTERMSIG(status)), flush=True)
    else:
        print("exited pid=%d status=%d" % (pid, os.WEXITSTATUS(status)), flush=True)
    time.sleep(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
