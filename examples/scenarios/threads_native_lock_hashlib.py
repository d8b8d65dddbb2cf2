# Content-digest service: 6 ingest workers pull 1 MiB upload chunks off a queue
# and fold them into a running SHA-256 "audit digest" of everything ingested.
# Bug: all workers share ONE hashlib object. hashlib drops the GIL for big
# buffers but takes the hash object's own C-level mutex, so only one worker
# hashes at a time and the rest sleep in futex on that lock. Fix: one hasher per
# worker (threading.local / per-worker object) and combine the digests at the end.
# (Written from the playbook's words by a second author, blind to the rules.)
# expect: threads.lock_contention
# sopctl: --duration 3
# also: cpu.oversubscribed
# SOP_SCENARIO_INTENSITY not read: six workers and 1 MiB chunks are the shape (the blind author's)
#
# Measured (2 CPUs, Python 3.11.7, 6 workers): shared hasher ~1580 calls/s
# (~1.65 GB/s, ~3.7 ms/call); one hasher per thread (temporary threading.local
# variant) ~2250-3000 calls/s (~2.35-3.15 GB/s, ~2.0-2.7 ms/call).
import hashlib
import os
import sys
import threading
import time

RUN_SECONDS = 60
WORKERS = 6
CHUNK = 1 << 20  # 1 MiB uploads

audit_digest = hashlib.sha256()          # shared by every worker (the bug)
stats_lock = threading.Lock()
stats = {"calls": 0, "in_call": 0.0, "total": 0.0}
started = threading.Barrier(WORKERS + 1)


def ingest_worker(wid, deadline):
    chunks = [os.urandom(CHUNK) for _ in range(4)]  # stand-in for upload queue
    first = True
    i = 0
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        data = chunks[i % len(chunks)]
        i += 1
        t1 = time.perf_counter()
        audit_digest.update(data)        # releases GIL, takes object's mutex
        t2 = time.perf_counter()
        with stats_lock:
            stats["calls"] += 1
            stats["in_call"] += t2 - t1
            stats["total"] += t2 - t0
        if first:
            first = False
            started.wait()


def main():
    deadline = time.monotonic() + RUN_SECONDS
    for wid in range(WORKERS):
        threading.Thread(target=ingest_worker, args=(wid, deadline),
                         name=f"ingest-{wid}", daemon=True).start()
    started.wait()
    print("ready", flush=True)
    with stats_lock:
        c0 = stats["calls"]
    t0 = time.perf_counter()
    time.sleep(3)
    with stats_lock:
        calls, in_call, total = stats["calls"], stats["in_call"], stats["total"]
    rate = (calls - c0) / (time.perf_counter() - t0)
    print(f"self-check: {rate:.0f} calls/s ({rate * CHUNK / 1e9:.2f} GB/s), "
          f"{100 * in_call / max(total, 1e-9):.1f}% of worker time inside "
          f"update(), {1e3 * in_call / max(calls, 1):.2f} ms/call",
          file=sys.stderr, flush=True)
    while time.monotonic() < deadline:
        time.sleep(0.5)
    print(f"audit digest {audit_digest.hexdigest()[:16]}", file=sys.stderr)


if __name__ == "__main__":
    main()
