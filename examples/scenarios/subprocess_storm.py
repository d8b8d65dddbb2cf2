# expect: subprocess.storm
# sopctl: --duration 3
"""§8.4: a subprocess storm. A file-preprocessing loop runs one short external command per
item (`true` standing in for ffmpeg/sox/identify on a tiny input): the fork + exec + wait of
each call costs far more than the work it does."""
import os
import subprocess
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

stop = time.time() + 60
n = 0
print("ready", flush=True)
while time.time() < stop:
    for _ in range(INTENSITY):  # one tool per item, or a two-tool pipeline
        subprocess.run(["true"], check=True)
    n += 1
