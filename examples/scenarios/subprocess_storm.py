# expect: subprocess.storm
# sopctl: --duration 3
"""§8.4: a subprocess storm. A file-preprocessing loop runs one short external command per
item (`true` standing in for ffmpeg/sox/identify on a tiny input): the fork + exec + wait of
each call costs far more than the work it does."""
import subprocess
import time

stop = time.time() + 60
n = 0
print("ready", flush=True)
while time.time() < stop:
    subprocess.run(["true"], check=True)
    n += 1
