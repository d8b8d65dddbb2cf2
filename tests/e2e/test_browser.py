"""test_browser.py — the reports as people see them, in Debian's headless chromium driven over
the DevTools protocol (--remote-debugging-pipe, Python's standard library only). A starved
DataLoader (examples/scenarios/dataloader_starved.py) is diagnosed with `sopctl run --format
html`; the page loads with no script error and no network request; the findings table is
there without JavaScript; clicking a flame-graph frame zooms to it; the Search button's prompt
highlights matches; a screenshot of the timeline shows the main thread's lane mostly in the
"waiting for a batch" colour while the worker's is not. Also: `record -o x.speedscope.json`
passes scripts/check_speedscope.py. Waits are on events, with generous bounds."""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(__file__))
from sopt import PY, Checks, Target, sopctl  # noqa: E402

SRC = os.environ.get("SOP_SRC") or os.path.join(os.path.dirname(__file__), "../..")
SCENARIO = os.path.join(SRC, "examples/scenarios/dataloader_starved.py")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BATCH_RGB = (0x2F, 0xB5, 0xD0)  # engine/render/timeline.c: "waiting for a batch"
ART = os.environ.get("SOP_BUILD", tempfile.gettempdir())


class Browser:
    """chromium --headless with the DevTools protocol over a pipe (fd 3 in, fd 4 out)."""

    def __init__(self):
        r, self.to_chrome = os.pipe()
        self.from_chrome, w = os.pipe()
        # the child's ends moved above 3 and 4 first, so the dup2 below cannot clobber them
        to_chrome_r, from_chrome_w = fcntl.fcntl(r, fcntl.F_DUPFD, 100), fcntl.fcntl(w, fcntl.F_DUPFD, 100)
        os.close(r)
        os.close(w)
        self.profile = tempfile.mkdtemp(prefix="sop_chromium")

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.p = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir=" + self.profile,
             "--window-size=1280,1000", "--force-device-scale-factor=1", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read_msg(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no message from chromium")
            r, _, _ = select.select([self.from_chrome], [], [], left)
            if r:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=60):
        i = self.send(method, params, session)
        deadline = time.time() + timeout
        while True:
            m = self.read_msg(deadline)
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        for k, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(k)
        while True:
            m = self.read_msg(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("script: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def click(self, x, y, wait=True):
        """A left click. wait=False: the release is not waited for (a click that opens a
        dialog answers only once the dialog is handled)."""
        ev = {"x": x, "y": y, "button": "left", "clickCount": 1}
        self.call("Input.dispatchMouseEvent", dict(ev, type="mousePressed"))
        if wait:
            self.call("Input.dispatchMouseEvent", dict(ev, type="mouseReleased"))
        else:
            self.send("Input.dispatchMouseEvent", dict(ev, type="mouseReleased"))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big"), body[8], body[9]
            assert depth == 8 and ctype in (2, 6) and body[12] == 0, "unsupported PNG"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


t = Checks()
t0 = time.time()
if not CHROMIUM:
    t.check(False, "chromium is installed (scripts/install-deps.sh)")
    t.done()
tmp = tempfile.mkdtemp(prefix="sop_browser")
try:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with Target(argv=[PY, "-u", SCENARIO], env=env, timeout=180) as p:
        page = os.path.join(tmp, "report.html")
        code, out, err = sopctl("run", "--pid", p.pid, "--duration", "3", "--format", "html", "-o", page)
        t.check(code in (0, 1) and os.path.exists(page), "run --format html writes the page", (code, err))
        ss = os.path.join(tmp, "x.speedscope.json")
        code, out, err = sopctl("record", "--pid", p.pid, "--duration", "1", "-o", ss)
        chk = subprocess.run([PY, os.path.join(SRC, "scripts/check_speedscope.py"), ss],
                             capture_output=True, text=True)
        t.check(code == 0 and chk.returncode == 0, "record -o x.speedscope.json passes our format check",
                (code, err, chk.stdout))
    html = open(page, encoding="utf-8").read()
    t.check('<table id="findings">' in html and "dataloader.starved" in html.split("<script")[0],
            "the findings table is plain HTML (no script needed)")
    t.check("src=" not in html and "<link" not in html and "@import" not in html and "url(" not in html,
            "self-contained: no external script, style, font or image")
    b = Browser()
    try:
        ver = b.call("Browser.getVersion", session=False)
        target = b.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        b.session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                           session=False)["sessionId"]
        for dom in ("Page", "Runtime", "Network", "Log"):
            b.call(dom + ".enable")
        b.call("Page.navigate", {"url": "file://" + page})
        b.wait_event("Page.loadEventFired", timeout=90)
        ready = b.js("typeof window.sopFlame === 'object' && window.sopFlame.frames.length")
        t.check(ready and ready > 5, "the flame graph's script ran (%s frames) in %s" % (ready, ver.get("product")))
        # click-to-zoom: a real mouse click on the worker's __getitem__ frame
        box = b.js("""(function(){var g=window.sopFlame.frames.filter(function(f){
              return f.getAttribute('data-n').indexOf('__getitem__')>=0;})[0]; if(!g) return null;
              g.scrollIntoView({block:'center'}); var r=g.querySelector('rect').getBoundingClientRect();
              return {x:r.left+Math.min(r.width/2,20), y:r.top+r.height/2, w:r.width, name:g.getAttribute('data-n')};})()""")
        t.check(box is not None, "the worker's __getitem__ frame is drawn", box)
        if box:
            b.click(box["x"], box["y"])
            deadline = time.time() + 10
            zoomed = None
            while time.time() < deadline and not zoomed:
                zoomed = b.js("document.getElementById('sop-fg').getAttribute('data-zoomed')")
                time.sleep(0.1)
            wide = b.js("""(function(){var g=window.sopFlame.frames.filter(function(f){
                  return f.getAttribute('data-n')===%s;})[0]; return +g.querySelector('rect').getAttribute('width');})()"""
                        % json.dumps(box["name"]))
            hidden = b.js("window.sopFlame.frames.filter(function(f){return f.style.display==='none';}).length")
            t.check(zoomed == box["name"] and wide > 1000 and hidden > 0,
                    "clicking a frame zooms to it (full width, others hidden)", (zoomed, wide, hidden))
            b.js("window.sopFlame.reset()")
        # search: the Search button opens a prompt; the answer highlights the matches
        sbox = b.js("""(function(){var e=document.getElementById('sop-fg-search'); e.scrollIntoView({block:'center'});
              var r=e.getBoundingClientRect(); return {x:r.left+r.width/2, y:r.top+r.height/2};})()""")
        b.click(sbox["x"], sbox["y"], wait=False)
        b.wait_event("Page.javascriptDialogOpening", timeout=30)
        b.call("Page.handleJavaScriptDialog", {"accept": True, "promptText": "getitem"})
        deadline = time.time() + 10
        matched = ""
        while time.time() < deadline and not matched:
            matched = b.js("document.getElementById('sop-fg').getAttribute('data-matched')")
            time.sleep(0.1)
        hits = b.js("""[].slice.call(document.querySelectorAll('#sop-fg g.hit')).map(function(g){
              return g.querySelector('rect').getAttribute('fill');})""")
        t.check(matched and float(matched) > 0 and hits and all(h == "rgb(230,0,230)" for h in hits),
                "Search highlights the matching frames and shows the matched share", (matched, hits))
        # the timeline, as pixels: the main thread's lane is mostly "waiting for a batch".
        # A viewport as tall as the page: nothing scrolls and no scrollbar reflows the page
        # between measuring the lanes and taking the picture.
        height = 0
        for _ in range(5):
            h = b.js("Math.ceil(document.documentElement.scrollHeight)")
            if h == height:
                break
            height = h
            b.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": height,
                                                          "deviceScaleFactor": 1, "mobile": False})
        b.js("window.scrollTo(0, 0)")
        lanes = b.js("""(function(){
              return [].slice.call(document.querySelectorAll('#sop-tl g.lane')).map(function(g){
                var r=g.querySelector('rect').getBoundingClientRect();
                return {tid:+g.getAttribute('data-tid'), pid:+g.getAttribute('data-pid'),
                        worker:g.getAttribute('data-worker')==='1', top:g.getAttribute('data-top'),
                        x:r.left, y:r.top, w:r.width, h:r.height};});})()""")
        svgbox = b.js("""(function(){var r=document.getElementById('sop-tl').getBoundingClientRect();
              return {x:r.left, y:r.top, w:r.width, h:r.height};})()""")
        shot = b.call("Page.captureScreenshot", {"format": "png", "clip": {
            "x": svgbox["x"], "y": svgbox["y"], "width": svgbox["w"], "height": svgbox["h"], "scale": 1}})
        png = base64.b64decode(shot["data"])
        with open(os.path.join(ART, "test_browser_timeline.png"), "wb") as f:
            f.write(png)
        full = b.call("Page.captureScreenshot", {"format": "png"})
        with open(os.path.join(ART, "test_browser_report.png"), "wb") as f:
            f.write(base64.b64decode(full["data"]))
        w, h, rows = png_pixels(png)

        def batch_share(lane):
            """Share of the lane's drawing area (right of the labels) in the batch colour."""
            y = int(lane["y"] - svgbox["y"] + lane["h"] / 2)
            x0, x1 = int(w * 0.25) + 5, w - 2
            row = rows[min(max(y, 0), h - 1)][x0:x1]
            return sum(1 for px in row if all(abs(px[i] - BATCH_RGB[i]) <= 12 for i in range(3))) / max(len(row), 1)

        main = [ln for ln in lanes if not ln["worker"] and ln["tid"] == ln["pid"]]
        workers = [ln for ln in lanes if ln["worker"] and ln["tid"] == ln["pid"]]
        share = batch_share(main[0]) if main else 0
        wshare = max((batch_share(x) for x in workers), default=1)
        t.check(main and workers and share >= 0.4 and share > wshare + 0.2,
                "timeline screenshot: the main thread's lane is mostly 'waiting for a batch', the worker's not",
                (share, wshare, main, workers))
        errors = [m for m in b.events if m.get("method") == "Runtime.exceptionThrown" or
                  (m.get("method") == "Log.entryAdded" and m["params"]["entry"].get("level") == "error") or
                  (m.get("method") == "Runtime.consoleAPICalled" and m["params"].get("type") == "error")]
        t.check(not errors, "no script errors", errors[:3])
        requests = [m["params"]["request"]["url"] for m in b.events if m.get("method") == "Network.requestWillBeSent"]
        t.check(all(u.startswith("file://") or u.startswith("data:") for u in requests),
                "no network request (only the file itself)", requests[:5])
    finally:
        b.close()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("test_browser: %.0f s" % (time.time() - t0))
t.done()
