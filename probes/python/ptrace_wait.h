/* ptrace_wait.h — wait for a seized, interrupted tracee to be in its ptrace stop without
 * depending on the wait status: a host program that embeds libsop may reap with waitpid(-1)
 * on another thread (which also consumes a tracee's stop notification), so the stop is also
 * recognised with PTRACE_GETSIGINFO, with a timeout. Depends on libc. */
#ifndef SOP_PTRACE_WAIT_H
#define SOP_PTRACE_WAIT_H

typedef enum {
    SOP_STOP_EVENT,  /* PTRACE_EVENT_STOP: the interrupt (or a group-stop under SEIZE) */
    SOP_STOP_SIGNAL, /* a signal-delivery stop: *sig is the signal, to pass on */
} sop_stop_kind;

/* Wait until tid is in a ptrace stop, at most timeout_ms. Returns 0 with kind and sig set,
 * -ESRCH (the task exited), -ETIMEDOUT, or -errno. The caller still owns the tracee (it
 * detaches on every path). */
int sop__ptrace_wait_stop(int tid, int timeout_ms, sop_stop_kind *kind, int *sig);

#endif
