# An online ranking service enriches each request with user features read from a feature cache:
# an in-memory SQLite database opened once at startup and shared by a pool of 7 request workers
# (check_same_thread=False). Because one sqlite3.Connection must not run two statements at once,
# every worker takes the same threading.Lock around "execute + fetchall", and the lookup scans the
# table (no index on bucket), so the lock is held for several milliseconds per request. The
# workers queue on that lock: seven threads give the throughput of one (SOP §4.2: several threads
# with the same stack, all waiting on one lock). Fix: one connection per thread (threading.local,
# or a small connection pool; SQLite reads in WAL/uri mode run in parallel), add an index on
# bucket so the statement is short, and never hold the lock across the whole query.
# (Written from the playbook's words by a second author, blind to the rules.)
# expect: threads.lock_contention
# sopctl: --duration 3
# also: cpu.oversubscribed
# SOP_SCENARIO_INTENSITY not read: the pool size and table size are fixed so the critical section stays a few ms on a small host
"""Prints ready once every worker has finished several lookups and most workers are queued on
the connection lock at the same time (measured, not slept). Exits after 60 s."""
import random
import sqlite3
import threading
import time

N_WORKERS = 7
N_ROWS = 200_000
N_BUCKETS = 512
RUN_SECONDS = 60


def build_feature_cache():
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE TABLE features (user_id INTEGER PRIMARY KEY, bucket INTEGER,"
                 " ctr REAL, dwell REAL, recency REAL)")
    rng = random.Random(7)
    conn.executemany(
        "INSERT INTO features VALUES (?, ?, ?, ?, ?)",
        ((uid, rng.randrange(N_BUCKETS), rng.random(), rng.random() * 300.0, rng.random())
         for uid in range(N_ROWS)))
    conn.commit()
    return conn


feature_db = build_feature_cache()
feature_db_lock = threading.Lock()   # "sqlite connections are not thread-safe"

LOOKUP_SQL = ("SELECT count(*), avg(ctr), avg(dwell), max(recency) FROM features"
              " WHERE bucket = ? AND ctr > 0.1")

stats_lock = threading.Lock()
served = [0] * N_WORKERS
queued = [0]          # workers currently blocked in feature_db_lock.acquire()
stop = threading.Event()


def lookup_user_features(bucket):
    with stats_lock:
        queued[0] += 1
    with feature_db_lock:
        with stats_lock:
            queued[0] -= 1
        cur = feature_db.execute(LOOKUP_SQL, (bucket,))
        row = cur.fetchall()[0]
    return row


def score(request_id, feats):
    n, ctr, dwell, recency = feats
    return (ctr or 0.0) * 0.7 + (dwell or 0.0) / 300.0 * 0.2 + (recency or 0.0) * 0.1 + n * 1e-6


def serve_requests(worker):
    rng = random.Random(worker)
    request_id = 0
    while not stop.is_set():
        request_id += 1
        bucket = rng.randrange(N_BUCKETS)
        feats = lookup_user_features(bucket)
        score(request_id, feats)
        served[worker] += 1


workers = [threading.Thread(target=serve_requests, args=(w,), name="rank-worker-%d" % w,
                            daemon=True) for w in range(N_WORKERS)]
start = time.time()
for t in workers:
    t.start()

# steady state: everyone has been through the lock a few times and the queue is long
while time.time() - start < RUN_SECONDS:
    with stats_lock:
        waiting = queued[0]
    if min(served) >= 3 and waiting >= N_WORKERS - 2:
        break
    time.sleep(0.005)
print("ready", flush=True)

time.sleep(max(0.0, RUN_SECONDS - (time.time() - start)))
stop.set()
for t in workers:
    t.join(timeout=1.0)
elapsed = time.time() - start
print("served %d requests in %.1f s with %d workers" % (sum(served), elapsed, N_WORKERS), flush=True)
