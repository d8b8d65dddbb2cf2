#!/usr/bin/env python3
# Batch job runner: pulls jobs off an in-memory queue every ~70 ms, "processes"
# each one and appends progress lines to a per-job log file.
# BUG: each job's log handle is opened with open(path, "a") and cached in
# self.job_logs so later status updates can reuse it, but it is never closed
# when the job finishes -> one leaked file descriptor per job, forever.
# expect: progress.fds_grow
# sopctl: --duration 3
# (Written from the playbook's words by a second author, blind to the rules.)
import atexit, collections, hashlib, os, resource, shutil, sys, tempfile, time

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard != resource.RLIM_INFINITY and soft < hard:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

WORKDIR = tempfile.mkdtemp(prefix="jobrunner-")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


def fd_count():
    return len(os.listdir("/proc/self/fd"))


class JobRunner:
    def __init__(self, logdir):
        self.logdir = logdir
        self.job_logs = {}          # job_id -> open log handle (never closed!)
        self.done = collections.deque(maxlen=100)

    def log(self, job_id, msg):
        fh = self.job_logs.get(job_id)
        if fh is None:
            fh = open(os.path.join(self.logdir, f"job-{job_id}.log"), "a")
            self.job_logs[job_id] = fh
        fh.write(f"{time.time():.3f} {msg}\n")
        fh.flush()

    def run_job(self, job_id, payload):
        self.log(job_id, "started")
        digest = hashlib.sha256(payload).hexdigest()
        self.log(job_id, f"checksum {digest[:16]}")
        self.log(job_id, "finished")
        self.done.append(job_id)    # forgot: self.job_logs.pop(job_id).close()


def main():
    runner = JobRunner(WORKDIR)
    start = time.monotonic()
    deadline = start + 60
    ready_at = ready_fds = None
    checked = False
    job_id = 0
    while time.monotonic() < deadline:
        job_id += 1
        runner.run_job(job_id, os.urandom(4096))
        now = time.monotonic()
        if ready_at is None and now - start >= 1.0:
            ready_at, ready_fds = now, fd_count()
            print("ready", flush=True)
        elif ready_at is not None and not checked and now - ready_at >= 3.0:
            checked = True
            n = fd_count()
            print(f"self-check: fds at ready={ready_fds} now={n} "
                  f"rate={(n - ready_fds) / (now - ready_at):.1f}/s",
                  file=sys.stderr, flush=True)
        time.sleep(0.07)
    print(f"exiting after {job_id} jobs, {fd_count()} fds open",
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
