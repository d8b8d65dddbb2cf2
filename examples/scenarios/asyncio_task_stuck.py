# A healthy asyncio service (100 requests a second, each reading a reply from a downstream service
# over TCP in 250 ms, about 25 in flight) where one request hit a downstream connection that was
# accepted and never answered: that request awaits its reply with no timeout, for ever, while
# every other request of the same handler comes and goes (SOP §5).
# expect: asyncio.task_stuck
# sopctl: --duration 2
# SOP_SCENARIO_INTENSITY not read: the load is a fixed request rate, not a size.
import asyncio
import socketserver
import threading
import time

RATE = 100
REPLY_S = 0.25
STUCK_ID = 7


class Downstream(socketserver.BaseRequestHandler):
    def handle(self):
        req = self.request.recv(64)
        if req.strip() == b"%d" % STUCK_ID:
            time.sleep(3600)  # accepted, never answers
        time.sleep(REPLY_S)
        self.request.sendall(b"ok " + req)


async def handle_request(port, n, stats):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"%d\n" % n)
    reply = await reader.readline()  # the bug: no timeout on the downstream read
    writer.close()
    stats["served"] += 1
    return reply


async def main():
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Downstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    loop = asyncio.get_running_loop()
    stats = {"served": 0}
    keep = set()
    t0 = loop.time()
    n = 0
    ready = False
    stuck_at = None
    while loop.time() - t0 < 60:
        n += 1
        if n == STUCK_ID:
            stuck_at = loop.time()
        t = loop.create_task(handle_request(port, n, stats))
        keep.add(t)
        t.add_done_callback(keep.discard)
        # ready: the siblings measured coming and going (their replies served), the stuck one
        # pending meanwhile
        if not ready and stats["served"] >= 2 * RATE * REPLY_S and loop.time() - stuck_at > 4 * REPLY_S:
            print("ready", flush=True)
            ready = True
        await asyncio.sleep(1 / RATE)


asyncio.run(main())
