# Healthy: a scheduler thread sleeps and every 2 s hands a small job to workers blocked on
# queue.get(); idle most of the time, woken by a timer (SOP §9); no rule may warn, and it is no
# hang. (Written blind to the rules.)
# expect: none
# verdict: waiting
# sopctl: --duration 2
# HEALTHY control: a cron-like scheduler. The main thread sleeps in 0.5 s ticks
# and every 4th tick hands a small housekeeping job to 3 worker threads that are
# blocked on queue.get() the rest of the time. Mostly idle, ~0% CPU, constant
# thread count, jobs complete periodically.
import queue
import sys
import threading
import time

work_q = queue.Queue()
done = 0
done_lock = threading.Lock()


def worker():
    global done
    while True:
        name, fn = work_q.get()
        try:
            fn()
        finally:
            with done_lock:
                done += 1
            work_q.task_done()


def rotate_logs():
    sum(i * i for i in range(20000))


def flush_metrics():
    time.sleep(0.01)


def main():
    for i in range(3):
        threading.Thread(target=worker, name=f"sched-w{i}", daemon=True).start()
    print("ready", flush=True)
    t0 = time.time()
    tick = 0
    reported = False
    jobs = [("rotate_logs", rotate_logs), ("flush_metrics", flush_metrics)]
    while True:
        time.sleep(0.5)
        tick += 1
        if tick % 4 == 0:
            work_q.put(jobs[(tick // 4) % len(jobs)])
        if not reported and time.time() - t0 >= 3:
            print(f"[self-check] t={time.time() - t0:.1f}s threads={threading.active_count()} "
                  f"jobs_done={done} ticks={tick}", file=sys.stderr, flush=True)
            reported = True


if __name__ == "__main__":
    main()
