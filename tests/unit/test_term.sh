#!/usr/bin/env bash
# test_term.sh — `sopctl run` as a person at a terminal sees it: run under a pseudo-terminal
# (util-linux `script`) at 80 and 200 columns, the default --format auto prints the §9 verdict
# first, a one-line findings list, details wrapped to the width (display width: CJK counts 2),
# cleared/unknown as counts unless --all; colour follows --color and NO_COLOR; piped, the
# output is the Markdown of --format md, and JSON is the same on a terminal as in a pipe.
set -euo pipefail
: "${SOPCTL:?}" "${SOP_SRC:?}"
exec /usr/bin/python3 - "$SOPCTL" "$SOP_SRC" <<'EOF'
import os, re, shlex, subprocess, sys, unicodedata

sopctl, src = sys.argv[1], sys.argv[2]
ev = os.path.join(src, "tests/replay/asyncio_blocked.json")
fails = []

def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)

def pty(cols, args, env=None):
    """Run sopctl under a pseudo-terminal of `cols` columns; its output, \r stripped."""
    cmd = "stty cols %d rows 60; exec %s" % (cols, " ".join(shlex.quote(a) for a in [sopctl] + args))
    e = dict(os.environ, TERM="xterm")
    e.pop("NO_COLOR", None)
    e.update(env or {})
    p = subprocess.run(["script", "-qefc", cmd, "/dev/null"], capture_output=True, env=e,
                       stdin=subprocess.DEVNULL, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace").replace("\r", "")

ansi = re.compile(r"\x1b\[[0-9;]*m")

def width(line):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else
               0 if unicodedata.combining(c) else 1 for c in line)

base = ["run", "--evidence", ev, "--no-site"]
for cols in (80, 200):
    for lang in ("en", "zh"):
        rc, out = pty(cols, base + ["--lang", lang])
        check(rc == 1, "%d/%s: exit 1 for a warn finding, got %d" % (cols, lang, rc))
        check("\x1b[" in out, "%d/%s: colour on a terminal by default" % (cols, lang))
        plain = ansi.sub("", out)
        lines = plain.split("\n")
        verdict = "Verdict:" if lang == "en" else "结论:"
        vi = next((i for i, l in enumerate(lines) if l.startswith(verdict)), None)
        check(vi is not None and vi <= 3, "%d/%s: the verdict comes right after the header" % (cols, lang))
        li = next((i for i, l in enumerate(lines) if re.match(r"^  WARN  asyncio\.loop_blocked", l)), None)
        check(li is not None and vi is not None and li > vi, "%d/%s: one-line findings list after the verdict" % (cols, lang))
        di = next((i for i, l in enumerate(lines) if l.startswith("WARN asyncio.loop_blocked")), None)
        check(di is not None and li is not None and di > li, "%d/%s: details after the list" % (cols, lang))
        check("| " not in plain.split("\n")[0] and "|---|" not in plain, "%d/%s: no Markdown table" % (cols, lang))
        too_wide = [l for l in lines if width(l) > cols and not re.match(r"^  (refs|参考): \S+$", l)]
        check(not too_wide, "%d/%s: every line fits %d columns: %r" % (cols, lang, cols, too_wide[:2]))
        if cols == 200:
            check(any(width(l) > 80 for l in lines), "200/%s: the width is used" % lang)
        if lang == "en":
            check(re.search(r"^\d+ cleared, \d+ unknown .*--all", plain, re.M) is not None,
                  "%d: cleared/unknown collapsed to counts" % cols)
            check("- summary.verdict" not in plain and "io.small_reads" not in plain,
                  "%d: cleared checks not listed without --all" % cols)

rc, out = pty(80, base + ["--all"])
check(re.search(r"^cleared:\n  - \S+", ansi.sub("", out), re.M) is not None, "--all lists the cleared checks")
rc, out = pty(80, base, {"NO_COLOR": "1"})
check("\x1b[" not in out and "Verdict:" in out, "NO_COLOR turns colour off")
rc, out = pty(80, base + ["--color", "always"], {"NO_COLOR": "1"})
check("\x1b[" in out, "--color always wins over NO_COLOR")
rc, out = pty(80, base + ["--color", "never"])
check("\x1b[" not in out, "--color never")
rc, out = pty(80, base + ["--color", "sometimes"])
check(rc == 2, "--color sometimes is a usage error")

def untimed(b):
    """The run's own timing differs from run to run."""
    b = re.sub(rb"rules [0-9.]+ ms", b"rules T ms", b)
    return re.sub(rb'"rules":\s*[0-9.e+-]+', b'"rules": T', b)

piped = untimed(subprocess.run([sopctl] + base, capture_output=True).stdout)
md = untimed(subprocess.run([sopctl] + base + ["--format", "md"], capture_output=True).stdout)
check(piped == md and b"|---|" in piped, "not a terminal: Markdown as --format md")
rc, out = pty(80, base + ["--format", "json"])
js = untimed(subprocess.run([sopctl] + base + ["--format", "json"], capture_output=True).stdout)
check(untimed(out.encode()) == js, "JSON on a terminal is the JSON of a pipe")
rc, out = pty(80, base + ["--format", "md"])
check(untimed(out.encode()) == md, "--format md on a terminal is Markdown")
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    for args in (["--format", "html", "-o", tmp + "/a.html"], ["-o", tmp + "/b.html"]):
        p = subprocess.run([sopctl] + base + args, capture_output=True)
        page = open(args[-1], encoding="utf-8").read() if p.returncode == 1 else ""
        check(page.startswith("<!DOCTYPE html>") and '<table id="findings">' in page
              and 'id="verdict"' in page and "asyncio.loop_blocked" in page and 'id="no-pictures"' in page
              and "<script" not in page and "src=" not in page,
              "html from replayed evidence: table and verdict, no pictures, no script %r" % (args,))
    p = subprocess.run([sopctl] + base + ["-o", tmp + "/c.md"], capture_output=True)
    check(untimed(open(tmp + "/c.md", "rb").read()) == md, "-o FILE.md writes the Markdown")
sys.exit(1 if fails else 0)
EOF
