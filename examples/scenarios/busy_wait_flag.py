# A trainer thread scores batches in pure Python while the main loop waits for each result by
# spinning on the result list (`while len(scores) <= seen: pass`). The spinning thread holds the GIL for its switch
# interval at every turn, so the scoring thread gets the interpreter part of the time and a core
# burns on nothing (SOP §4: a thread busy on the same line, calling nothing; the fix is an Event).
# expect: gil.busy_wait
# sopctl: --duration 2
"""Ready after the first batches were scored (measured). Exits after 60 s."""
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
BATCH = 20000 * INTENSITY
scores = []  # appended by the scoring thread, consumed by the main loop


def scorer():
    b = 0
    while True:
        total = 0
        for i in range(BATCH):
            total += (i * 2654435761 + b) % 97
        scores.append(total)
        b += 1


threading.Thread(target=scorer, daemon=True).start()
stop, seen = time.time() + 60, 0
while time.time() < stop:
    while len(scores) <= seen:  # waits for the next score by spinning
        pass
    seen += 1
    if seen == 3:
        print("ready", flush=True)
