# expect: logging.hot_path
# also: logging.eager_format
# sopctl: --duration 3
"""§8.3: logging in the hot path. A preprocessing loop logs every item through a FileHandler
with a timestamped format, flushing on every record, and builds a debug message with an
f-string that the INFO level then drops: a large share of the loop's time goes to logging."""
import logging
import os
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

log_dir = tempfile.mkdtemp(prefix="sop_logging_")
logger = logging.getLogger("preprocess")
logger.setLevel(logging.INFO)
handler = logging.FileHandler(os.path.join(log_dir, "preprocess.log"))
handler.setFormatter(logging.Formatter(
    "%(asctime)s %(levelname)s %(name)s %(module)s:%(funcName)s:%(lineno)d %(message)s"))
logger.addHandler(handler)


def transform(item):
    return [(item * k) % 97 for k in range(8 * INTENSITY)]


stop = time.time() + 60
n = 0
print("ready", flush=True)
while time.time() < stop:
    row = transform(n)
    logger.debug(f"row {n}: {row!r} {sum(row)}")  # eager: built, then dropped at INFO
    logger.info("item %d done: checksum=%d first=%r", n, sum(row), row[:3])
    n += 1
    if n % 200000 == 0:  # keep the file small
        handler.stream.seek(0)
        handler.stream.truncate()
