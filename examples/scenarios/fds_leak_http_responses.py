# A price-feed poller fetches a quote from an internal HTTP service several times a second and
# keeps every response object in its audit list (to log the headers later), never closing it:
# each response holds its socket open, so the open descriptors climb steadily toward
# RLIMIT_NOFILE, where every open fails with "Too many open files" (SOP §9: is something piling
# up?). The fix is `with urllib.request.urlopen(...) as r:` (or r.close()) and keeping the data.
# expect: progress.fds_grow
# sopctl: --duration 3
"""Ready after the first second of polling. Exits after 60 s. Self-check on stderr: descriptors
from /proc/self/fd at ready and three seconds later (measured: ~+20/s at intensity 1)."""
import http.server
import os
import sys
import threading
import time
import urllib.request

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
EVERY_S = 0.05 / INTENSITY
deadline = time.time() + 60


class Quote(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b'{"px": 101.25}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quote)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/quote" % server.server_address[1]
audit = []   # the bug: every response kept, never closed


def fds():
    return len(os.listdir("/proc/self/fd"))


t0 = time.time()
ready_at = None
while time.time() < deadline:
    r = urllib.request.urlopen(url, timeout=5)
    r.read(5)                       # peeks at the price; the rest is never read, r never closed
    audit.append(r)
    if ready_at is None and time.time() - t0 > 1:
        ready_at, n0 = time.time(), fds()
        print("ready", flush=True)
    elif ready_at and n0 is not None and time.time() - ready_at > 3:
        n1 = fds()
        print("[self-check] descriptors %d -> %d in 3 s (%+.1f/s)" % (n0, n1, (n1 - n0) / 3),
              file=sys.stderr, flush=True)
        n0 = None
    time.sleep(EVERY_S)
