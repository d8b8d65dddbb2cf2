# A service starts a thread per request that waits for a reply from a backend dispatcher that was
# never started: no request completes and the threads pile up (SOP §9: is something piling up?).
# (Written from the playbook's words by a second author, blind to the rules.)
# expect: progress.threads_grow
# verdict: waiting while
# sopctl: --duration 2
# Inference gateway: one handler thread per incoming request, each waits for the
# backend to post the result into its own reply slot.
# BUG: the backend dispatcher was never started, so nobody ever sets the reply
# Event; each handler waits forever (no timeout) and its thread is never
# reclaimed. ~20 new threads/s pile up, zero requests complete.
# Symptom: `grep Threads /proc/PID/status` climbs steadily; completed stays 0.
import itertools
import sys
import threading
import time

MAX_THREADS = 2500     # safety cap for the test harness
REQ_RATE = 20          # requests / second

completed = 0
pending_replies = {}   # req_id -> (Event, slot)


def handle_request(req_id, payload):
    global completed
    ev = threading.Event()
    slot = {}
    pending_replies[req_id] = (ev, slot)
    # enqueue to backend ... (dispatcher missing)
    ev.wait()                       # no timeout: blocks forever
    completed += 1
    return slot.get("out")


def main():
    t0 = time.time()
    reported = False
    printed_ready = False
    for req_id in itertools.count():
        if threading.active_count() < MAX_THREADS:
            threading.Thread(target=handle_request, args=(req_id, b"x" * 128),
                             name=f"req-{req_id}", daemon=True).start()
        if not printed_ready and req_id >= 5:
            print("ready", flush=True)
            printed_ready = True
        if not reported and time.time() - t0 >= 3:
            print(f"[self-check] t={time.time() - t0:.1f}s threads={threading.active_count()} "
                  f"requests={req_id + 1} completed={completed}",
                  file=sys.stderr, flush=True)
            reported = True
        time.sleep(1.0 / REQ_RATE)


if __name__ == "__main__":
    main()
