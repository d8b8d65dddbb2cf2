#!/usr/bin/env bash
# test_escape_cli.sh — hostile strings in an evidence file reach no output raw (issue 13 item
# 3), end to end through `sopctl run --evidence`: python.version with ESC/BEL/CR/LF, a comm and
# argv holding a Markdown link, an <img> and a backtick, and invalid UTF-8 bytes. md and text
# carry no raw control byte and no live markup from them; JSON is valid JSON text and valid
# UTF-8. The per-format, per-place table is tests/unit/test_escape.c. Needs SOPCTL, SOP_SRC, jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
# invalid UTF-8 (\xff, \xc0\xaf) written raw into the JSON strings, escapes as \u escapes
jq '.python = ((.python // {}) + {version: "3.11\u001b[2J\u0007\r\nFAKE"})
    | .proc.comm = "py[x](http://e.example)<img src=x>`"
    | .proc.cmdline = "python3 `rm -rf` [a](b) <script>|x|"' \
  "$SRC/tests/replay/healthy.json" >"$tmp/ev0.json"
sed 's/FAKE/FAKE\xff\xc0\xaf/; s/<script>/<script>\xfe/' "$tmp/ev0.json" >"$tmp/ev.json"
for fmt in md text json; do
  "$SOPCTL" run --evidence "$tmp/ev.json" --format "$fmt" >"$tmp/out.$fmt" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || { bad "$fmt: exit $rc: $(head -c 200 "$tmp/err")"; continue; }
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$tmp/out.$fmt"; then
    bad "$fmt: raw control bytes: $(LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f]' "$tmp/out.$fmt" | head -c 200 | od -c | head -3)"
  else ok "$fmt: no raw control byte"; fi
  iconv -f UTF-8 -t UTF-8 "$tmp/out.$fmt" >/dev/null 2>&1 && ok "$fmt: valid UTF-8" || bad "$fmt: invalid UTF-8"
  grep -q "FAKE" "$tmp/out.$fmt" && ok "$fmt: the version is shown" || bad "$fmt: version missing"
done
grep -q "^FAKE" "$tmp/out.md" "$tmp/out.text" && bad "a CR/LF in python.version starts a line" || ok "python.version: no new line"
jq -e . "$tmp/out.json" >/dev/null 2>&1 && ok "json: valid JSON" || bad "json: not valid JSON"
# live markup: outside code spans (literal text in Markdown), an unescaped '<' or "](" is live
live=$(/usr/bin/python3 - "$tmp/out.md" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
text = re.sub(r"(?<![`\\])(`+)(?!`)(.*?)(?<!`)\1(?!`)", "", text)  # code spans
text = re.sub(r"\\.", "", text)                                   # escaped characters
print(" ".join(m for m in ("<img", "<script", "](") if m in text))
PY
)
[ -z "$live" ] && ok "md: no live <img>, <script> or link" || bad "md: live markup: $live"
finish
