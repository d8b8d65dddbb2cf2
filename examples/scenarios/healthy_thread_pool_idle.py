# Healthy: a threading TCP server and a queue of workers with nothing to do: the workers wait on
# the queue, the server in accept/select for a client that does not come. Idle, waiting on outside
# work (SOP §9); no rule may warn, and it is no hang. (Written blind to the rules.)
# expect: none
# verdict: waiting
# sopctl: --duration 2
# HEALTHY control: a small job server. A ThreadingTCPServer on 127.0.0.1
# (ephemeral port) accepts job submissions; 4 worker threads block on a
# queue.Queue waiting for jobs. No client ever connects, so everything is
# simply idle: ~0% CPU, constant thread count, no growth. Nothing is wrong.
import queue
import socketserver
import sys
import threading
import time

jobs = queue.Queue()
done = 0


def worker():
    global done
    while True:
        item = jobs.get()
        if item is None:
            return
        _ = sum(item)  # trivial work
        done += 1
        jobs.task_done()


class JobHandler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            nums = [int(x) for x in line.split()]
            jobs.put(nums)
            self.wfile.write(b"queued\n")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    workers = [threading.Thread(target=worker, name=f"job-w{i}", daemon=True) for i in range(4)]
    for w in workers:
        w.start()
    srv = Server(("127.0.0.1", 0), JobHandler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.5},
                     name="acceptor", daemon=True).start()
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", file=sys.stderr, flush=True)
    print("ready", flush=True)
    time.sleep(3)
    print(f"[self-check] t=3s threads={threading.active_count()} queued={jobs.qsize()} "
          f"jobs_done={done}", file=sys.stderr, flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
