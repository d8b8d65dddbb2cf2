# A hand-written worker pool (queue.Queue + threads): a document job submits its chunk jobs to the
# same pool and waits on each with Event.wait(). Once every worker holds a document job, the chunk
# jobs wait in the queue for a free worker that never comes (SOP §9: every thread waits on another).
# (Written from the playbook's words by a second author, blind to the rules.)
# expect: progress.hang
# verdict: stalled
# sopctl: --duration 2
# Feature-extraction job runner built on a hand-rolled worker pool.
# BUG: a "document" job fans out one "chunk" job per chunk onto the SAME pool
# and blocks on the chunk results. With 4 workers and >=4 documents in flight,
# every worker is a parent waiting for children that sit in the queue forever.
# Symptom: process at ~0% CPU, all worker threads parked in Event.wait /
# Condition.wait, "docs done" counter never moves past 0.
import queue
import sys
import threading
import time

N_WORKERS = 4


class Job:
    __slots__ = ("fn", "args", "_done", "_result")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args
        self._done = threading.Event()
        self._result = None

    def result(self):
        self._done.wait()          # no timeout -> waits forever
        return self._result


class WorkerPool:
    def __init__(self, n):
        self.q = queue.Queue()
        self.threads = [threading.Thread(target=self._loop, name=f"pool-w{i}", daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _loop(self):
        while True:
            job = self.q.get()
            try:
                job._result = job.fn(*job.args)
            finally:
                job._done.set()

    def submit(self, fn, *args):
        job = Job(fn, args)
        self.q.put(job)
        return job


pool = None
docs_done = 0
docs_lock = threading.Lock()


def embed_chunk(text):
    return sum(ord(c) for c in text) % 997


def process_document(doc_id, text):
    global docs_done
    time.sleep(0.05)  # pretend to tokenize
    chunks = [text[i:i + 64] for i in range(0, len(text), 64)]
    children = [pool.submit(embed_chunk, c) for c in chunks]   # same pool!
    vec = [c.result() for c in children]                        # blocks a worker
    with docs_lock:
        docs_done += 1
    return doc_id, vec


def main():
    global pool
    pool = WorkerPool(N_WORKERS)
    corpus = [("doc%03d" % i, "lorem ipsum dolor sit amet " * 20) for i in range(32)]
    pending = [pool.submit(process_document, d, t) for d, t in corpus]
    time.sleep(3.0)
    print("ready", flush=True)
    print(f"[self-check] t=3s docs_done={docs_done}/{len(corpus)} "
          f"queue_backlog={pool.q.qsize()} threads={threading.active_count()}",
          file=sys.stderr, flush=True)
    for p in pending:
        p.result()
    print("all done", flush=True)


if __name__ == "__main__":
    main()
