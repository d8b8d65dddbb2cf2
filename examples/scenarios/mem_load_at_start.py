# expect: mem.load_at_start
# cgroup: memory=900M
# sopctl: --duration 2
"""mem_load_at_start.py — SOP §2.2 ("killed right after start"): a training script that reads its
whole dataset (8 JSON shards, ~650 MiB of Python objects) into RAM before the first step, under
a 900 MiB memory limit. "ready" comes after the first shard, while loading goes on."""
import json
import os
import shutil
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

SHARDS, ROWS = 8 * INTENSITY, 200_000 // INTENSITY  # the same data in more, smaller shards


def main():
    d = tempfile.mkdtemp(prefix="sop-load-")
    try:
        text = "[" + ",".join('{"id": %d, "text": "sample text number %d", "label": %d, '
                              '"score": %d.5}' % (i, i, i % 7, i) for i in range(ROWS)) + "]"
        paths = []
        for k in range(SHARDS):
            paths.append(os.path.join(d, "shard-%02d.json" % k))
            with open(paths[-1], "w") as f:
                f.write(text)
        del text
        dataset = []
        for k, p in enumerate(paths):
            with open(p) as f:
                dataset.extend(json.load(f))  # the whole shard, as Python objects
            if k == 0:  # most of the load still to come: inside the window on a fast host too
                print("ready", flush=True)
        t0 = time.time()
        while time.time() - t0 < 20:  # "training"
            time.sleep(0.2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
