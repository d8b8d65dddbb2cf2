#!/usr/bin/env python3
"""check_speedscope.py FILE... — check a speedscope JSON file against the required fields and
types of speedscope's file format (https://www.speedscope.app/file-format-schema.json, from
speedscope's src/lib/file-format-spec.ts): the file, shared frames, sampled and evented
profiles; plus what the viewer relies on beyond the schema (frame indices in range, one weight
per sample, events within the profile). Standard library only. Exit 0 when every file passes,
1 with one line per problem otherwise."""
import json
import sys

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v):
    return is_num(v) and float(v).is_integer()


def check(doc):
    """The problems of one parsed file, as strings."""
    bad = []

    def need(obj, key, pred, what, where):
        if not isinstance(obj, dict) or key not in obj:
            bad.append("%s: missing required %r" % (where, key))
            return False
        if not pred(obj[key]):
            bad.append("%s.%s: not %s" % (where, key, what))
            return False
        return True

    def opt(obj, key, pred, what, where):
        if isinstance(obj, dict) and key in obj and not pred(obj[key]):
            bad.append("%s.%s: not %s" % (where, key, what))

    if not isinstance(doc, dict):
        return ["the file is not a JSON object"]
    need(doc, "$schema", lambda v: v == SCHEMA, repr(SCHEMA), "file")
    opt(doc, "name", lambda v: isinstance(v, str), "a string", "file")
    opt(doc, "exporter", lambda v: isinstance(v, str), "a string", "file")
    opt(doc, "activeProfileIndex", is_num, "a number", "file")
    nframes = 0
    if need(doc, "shared", lambda v: isinstance(v, dict), "an object", "file") and \
            need(doc["shared"], "frames", lambda v: isinstance(v, list), "an array", "shared"):
        frames = doc["shared"]["frames"]
        nframes = len(frames)
        for i, fr in enumerate(frames):
            w = "shared.frames[%d]" % i
            if not isinstance(fr, dict):
                bad.append(w + ": not an object")
                continue
            need(fr, "name", lambda v: isinstance(v, str), "a string", w)
            opt(fr, "file", lambda v: isinstance(v, str), "a string", w)
            opt(fr, "line", is_num, "a number", w)
            opt(fr, "col", is_num, "a number", w)
    if not need(doc, "profiles", lambda v: isinstance(v, list), "an array", "file"):
        return bad
    profiles = doc["profiles"]
    if "activeProfileIndex" in doc and is_num(doc["activeProfileIndex"]) and profiles and \
            not 0 <= doc["activeProfileIndex"] < len(profiles):
        bad.append("file.activeProfileIndex: out of range")
    for i, p in enumerate(profiles):
        w = "profiles[%d]" % i
        if not isinstance(p, dict):
            bad.append(w + ": not an object")
            continue
        ok = need(p, "type", lambda v: v in ("sampled", "evented"), "'sampled' or 'evented'", w)
        need(p, "name", lambda v: isinstance(v, str), "a string", w)
        need(p, "unit", lambda v: v in UNITS, "one of " + ", ".join(sorted(UNITS)), w)
        need(p, "startValue", is_num, "a number", w)
        need(p, "endValue", is_num, "a number", w)
        if not ok:
            continue
        if p["type"] == "sampled":
            s_ok = need(p, "samples", lambda v: isinstance(v, list), "an array", w)
            w_ok = need(p, "weights", lambda v: isinstance(v, list), "an array", w)
            if s_ok:
                for k, st in enumerate(p["samples"]):
                    if not isinstance(st, list) or not all(is_int(x) for x in st):
                        bad.append("%s.samples[%d]: not an array of frame indices" % (w, k))
                    elif any(not 0 <= x < nframes for x in st):
                        bad.append("%s.samples[%d]: a frame index out of range" % (w, k))
            if w_ok:
                for k, x in enumerate(p["weights"]):
                    if not is_num(x):
                        bad.append("%s.weights[%d]: not a number" % (w, k))
            if s_ok and w_ok and len(p["samples"]) != len(p["weights"]):
                bad.append("%s: %d samples but %d weights" % (w, len(p["samples"]), len(p["weights"])))
            if w_ok and all(is_num(x) for x in p["weights"]) and is_num(p.get("startValue")) and \
                    is_num(p.get("endValue")) and \
                    p["endValue"] - p["startValue"] + 1e-9 < sum(p["weights"]):
                bad.append("%s: weights add up past endValue - startValue" % w)
        else:
            if need(p, "events", lambda v: isinstance(v, list), "an array", w):
                for k, ev in enumerate(p["events"]):
                    ew = "%s.events[%d]" % (w, k)
                    need(ev, "type", lambda v: v in ("O", "C"), "'O' or 'C'", ew)
                    need(ev, "at", is_num, "a number", ew)
                    need(ev, "frame", lambda v: is_int(v) and 0 <= v < nframes,
                         "a frame index in range", ew)
    return bad


def main(paths):
    failed = False
    for path in paths:
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            print("%s: not a JSON file in UTF-8: %s" % (path, e))
            failed = True
            continue
        for problem in check(doc):
            print("%s: %s" % (path, problem))
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[0])
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
