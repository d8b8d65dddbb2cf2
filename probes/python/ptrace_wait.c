/* ptrace_wait.c — see ptrace_wait.h. The tracee's own wait status is taken when it is there
 * (waitpid on the exact tid, __WALL, non-blocking); when another thread of the host reaped it
 * first, PTRACE_GETSIGINFO (which succeeds only on a tracee in a ptrace stop) tells that it is
 * stopped and why. Polled every 0.2 ms at first, backing off to 2 ms. Depends on libc. */
#include "ptrace_wait.h"

#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int sop__ptrace_wait_stop(int tid, int timeout_ms, sop_stop_kind *kind, int *sig)
{
    *kind = SOP_STOP_EVENT;
    *sig = 0;
    double deadline = mono_ms() + timeout_ms;
    long nap_ns = 200000;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(tid, &status, __WALL | WNOHANG);
        if (r == tid) {
            if (WIFEXITED(status) || WIFSIGNALED(status))
                return -ESRCH;
            if (WIFSTOPPED(status)) {
                if ((status >> 16) != PTRACE_EVENT_STOP) {
                    *kind = SOP_STOP_SIGNAL;
                    *sig = WSTOPSIG(status);
                }
                return 0;
            }
            continue;
        }
        if (r < 0 && errno != EINTR && errno != ECHILD)
            return -errno;
        /* No status for us (yet, or someone else took it): is it stopped all the same? */
        siginfo_t si;
        if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) == 0) {
            if (si.si_code >> 8 != PTRACE_EVENT_STOP) {
                *kind = SOP_STOP_SIGNAL;
                *sig = si.si_signo;
            }
            return 0;
        }
        if (errno == EINVAL)
            return 0; /* a group-stop: still */
        /* Neither waitable nor stopped: still running, or gone (its exit reaped elsewhere). */
        if (kill(tid, 0) < 0 && errno == ESRCH)
            return -ESRCH;
        if (mono_ms() >= deadline)
            return -ETIMEDOUT;
        struct timespec nap = {0, nap_ns};
        nanosleep(&nap, NULL);
        if (nap_ns < 2000000)
            nap_ns *= 2;
    }
}
