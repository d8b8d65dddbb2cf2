# A dispatcher waits for replies by spinning on `while not self._stop and q.empty(): pass` while
# feature-hashing worker threads do pure-Python work (SOP §4). (Written blind to the rules.)
# expect: gil.busy_wait
# also: gil.contention
# also@cpu1: gil.contention cpu.oversubscribed
# sopctl: --duration 2
"""
Toy feature-serving frontend.  A Dispatcher thread feeds "requests" (short
text documents) to a pool of FeatureWorker threads through queue.Queue, and
then waits for the responses with

    while not self._stop and self._responses.empty():
        pass

PROBLEM: that loop is a busy-wait.  Queue.empty() returns immediately, so
the dispatcher never blocks; it keeps re-acquiring the GIL (and the queue's
mutex) thousands of times a second and competes with the workers, which do
pure-Python tokenisation / feature hashing and therefore need the GIL to make
progress.  Symptom: the process sits at ~100% of one core, but requests/s is
well below what the same workers achieve when the dispatcher blocks on
Queue.get(); a thread dump always shows the dispatcher in _drain_responses
on the `empty()` line, and the Queue mutex is hot.
FIX: self._responses.get(timeout=...) (a blocking wait), or a Condition.
"""
import os
import queue
import random
import sys
import threading
import time
import zlib

INTENSITY = max(1, int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or "1"))
N_WORKERS = 3 * INTENSITY
RUN_SECONDS = 75
N_FEATURES = 1 << 18

_VOCAB = ("model latency batch token cache gpu request user session embed rank "
          "score click query item vector shard replica timeout retry queue").split()


def synth_docs(n, rnd):
    return [" ".join(rnd.choice(_VOCAB) + str(rnd.randint(0, 50)) for _ in range(rnd.randint(300, 600)))
            for _ in range(n)]


def featurize(doc):
    """Hashing-trick bag of uni/bi-grams, pure Python."""
    toks = doc.lower().split()
    feats = {}
    prev = "<s>"
    for t in toks:
        for g in (t, prev + "_" + t):
            idx = zlib.crc32(g.encode()) % N_FEATURES
            feats[idx] = feats.get(idx, 0) + 1
        prev = t
    norm = sum(v * v for v in feats.values()) ** 0.5
    return {k: v / norm for k, v in feats.items()}


class FeatureWorker(threading.Thread):
    def __init__(self, requests, responses, wid):
        super().__init__(name="feature-worker-%d" % wid, daemon=True)
        self.requests = requests
        self.responses = responses

    def run(self):
        while True:
            req = self.requests.get()
            if req is None:
                return
            rid, doc = req
            self.responses.put((rid, len(featurize(doc))))


class Dispatcher:
    def __init__(self, docs):
        self.docs = docs
        self._requests = queue.Queue()
        self._responses = queue.Queue()
        self._stop = False
        self.workers = [FeatureWorker(self._requests, self._responses, i) for i in range(N_WORKERS)]
        self.completed = 0
        self.polls = 0

    def _drain_responses(self, expected):
        got = 0
        while got < expected:
            # BUG: spin-poll instead of a blocking get()
            while not self._stop and self._responses.empty():
                self.polls += 1
                pass
            if self._stop:
                return got
            self._responses.get_nowait()
            got += 1
            self.completed += 1
        return got

    def serve(self):
        for w in self.workers:
            w.start()
        rid = 0
        batch = 8 * N_WORKERS
        while not self._stop:
            for _ in range(batch):
                self._requests.put((rid, self.docs[rid % len(self.docs)]))
                rid += 1
            self._drain_responses(batch)

    def shutdown(self):
        self._stop = True
        for _ in self.workers:
            self._requests.put(None)


def main():
    rnd = random.Random(11)
    docs = synth_docs(1500, rnd)

    # reference number: the same featurization on one thread, no dispatcher
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 1.0:
        featurize(docs[n % len(docs)])
        n += 1
    base = n / (time.perf_counter() - t0)

    disp = Dispatcher(docs)
    th = threading.Thread(target=disp.serve, name="dispatcher", daemon=True)
    th.start()
    time.sleep(0.2)
    print("ready", flush=True)

    c0, p0 = disp.completed, disp.polls
    t0, cpu0 = time.perf_counter(), time.process_time()
    time.sleep(3.0)
    dt = time.perf_counter() - t0
    rps = (disp.completed - c0) / dt
    print("[self-check] %d workers served %.0f req/s (one plain thread alone: %.0f req/s, ratio %.2f); "
          "dispatcher polled empty() %.2fM times/s (~%.0f polls per request); process CPU %.0f%%" % (
              N_WORKERS, rps, base, rps / base, (disp.polls - p0) / dt / 1e6,
              (disp.polls - p0) / max(1, disp.completed - c0),
              (time.process_time() - cpu0) / dt * 100), file=sys.stderr, flush=True)

    time.sleep(RUN_SECONDS - 3.0)
    disp.shutdown()
    th.join(2.0)
    print("served %d requests" % disp.completed, file=sys.stderr)


if __name__ == "__main__":
    main()
