# Account transfers on two threads that take the two accounts' locks in opposite orders: a
# lock-ordering deadlock within moments, the main thread joined on them (SOP §9: every thread
# waits on another). (Written from the playbook's words by a second author, blind to the rules.)
# expect: progress.hang
# verdict: stalled
# sopctl: --duration 2
# Ledger service: transfer(a, b) locks the source account, then the destination.
# BUG: classic lock-ordering deadlock. One thread moves money A->B while another
# moves B->A; each holds its first lock and waits for the other's. The main
# thread join()s the workers forever.
# Symptom: 0% CPU, transfer counters frozen, py-spy shows both workers in
# lock.acquire() inside transfer(), main thread in Thread.join().
import sys
import threading
import time


class Account:
    def __init__(self, name, balance):
        self.name = name
        self.balance = balance
        self.lock = threading.Lock()


transfers_done = [0, 0]


def transfer(src, dst, amount):
    with src.lock:
        time.sleep(0.001)           # audit log write, widens the window
        with dst.lock:
            src.balance -= amount
            dst.balance += amount


def settle_loop(idx, src, dst):
    while True:
        transfer(src, dst, 1)
        transfers_done[idx] += 1


def reporter():
    print(f"[self-check] t=3s transfers_done={sum(transfers_done)} "
          f"(a->b={transfers_done[0]}, b->a={transfers_done[1]}) "
          f"a.locked={alice.lock.locked()} b.locked={bob.lock.locked()}",
          file=sys.stderr, flush=True)


alice = Account("alice", 10_000)
bob = Account("bob", 10_000)


def main():
    workers = [
        threading.Thread(target=settle_loop, args=(0, alice, bob), name="settle-ab"),
        threading.Thread(target=settle_loop, args=(1, bob, alice), name="settle-ba"),
    ]
    for w in workers:
        w.start()
    # wait until they're wedged
    last = -1
    while True:
        time.sleep(0.2)
        now = sum(transfers_done)
        if now == last:
            break
        last = now
    reporter()
    print("ready", flush=True)
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
