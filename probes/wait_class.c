/* wait_class.c — the syscall a sleeping thread is in, sorted by what can wake it (wait_class.h).
 * The numbers are syscall_nr.h's (x86-64, aarch64); an unknown syscall is "other".
 * Depends on libc. */
#include "wait_class.h"

#include <stdlib.h>

#include "syscall_nr.h"

#define FUTEX_CMD_MASK 0x7f /* drops FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
enum {
    FUTEX_WAIT = 0,
    FUTEX_LOCK_PI = 6,
    FUTEX_WAIT_BITSET = 9,
    FUTEX_WAIT_REQUEUE_PI = 11,
    FUTEX_LOCK_PI2 = 13
};

const char *sop__wait_class_name(sop_wait_class c)
{
    static const char *const names[SOP_WC_N] = {"none", "gil",   "lock",  "lock_timed", "net",
                                                "read", "timer", "child", "signal",     "other"};
    return c >= 0 && c < SOP_WC_N ? names[c] : "none";
}

int sop__syscall_is_futex(long nr)
{
    return nr == SOP_NR_FUTEX;
}

long sop__syscall_parse(const char *text, unsigned long long args[6])
{
    for (int i = 0; i < 6; i++)
        args[i] = 0;
    char *end = NULL;
    long nr = strtol(text, &end, 10);
    if (end == text || nr < 0)
        return -1;
    const char *p = end;
    for (int i = 0; i < 6; i++) {
        unsigned long long v = strtoull(p, &end, 16);
        if (end == p)
            break;
        args[i] = v;
        p = end;
    }
    return nr;
}

sop_wait_class sop__wait_classify(long nr, const unsigned long long args[6])
{
    if (nr < 0)
        return SOP_WC_NONE;
    if (nr == SOP_NR_FUTEX) {
        unsigned cmd = (unsigned)args[1] & FUTEX_CMD_MASK;
        if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_LOCK_PI &&
            cmd != FUTEX_WAIT_REQUEUE_PI && cmd != FUTEX_LOCK_PI2)
            return SOP_WC_OTHER; /* a wake or requeue: on its way out */
        return args[3] ? SOP_WC_LOCK_TIMED : SOP_WC_LOCK;
    }
    if (nr == SOP_NR_POLL || nr == SOP_NR_SELECT || nr == SOP_NR_EPOLL_WAIT ||
        nr == SOP_NR_PSELECT6 || nr == SOP_NR_PPOLL || nr == SOP_NR_EPOLL_PWAIT ||
        nr == SOP_NR_EPOLL_PWAIT2 || nr == SOP_NR_ACCEPT || nr == SOP_NR_ACCEPT4 ||
        nr == SOP_NR_CONNECT || nr == SOP_NR_RECVFROM || nr == SOP_NR_RECVMSG ||
        nr == SOP_NR_RECVMMSG || nr == SOP_NR_SENDTO || nr == SOP_NR_SENDMSG)
        return SOP_WC_NET;
    if (nr == SOP_NR_READ || nr == SOP_NR_WRITE || nr == SOP_NR_PREAD || nr == SOP_NR_READV ||
        nr == SOP_NR_WRITEV || nr == SOP_NR_PREADV)
        return SOP_WC_READ;
    if (nr == SOP_NR_NANOSLEEP || nr == SOP_NR_CLOCK_NANOSLEEP)
        return SOP_WC_TIMER;
    if (nr == SOP_NR_WAIT4 || nr == SOP_NR_WAITID)
        return SOP_WC_CHILD;
    if (nr == SOP_NR_PAUSE || nr == SOP_NR_RT_SIGSUSPEND || nr == SOP_NR_RT_SIGTIMEDWAIT)
        return SOP_WC_SIGNAL;
    return SOP_WC_OTHER;
}
