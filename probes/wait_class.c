/* wait_class.c — the syscall a sleeping thread is in, sorted by what can wake it (wait_class.h).
 * The numbers are x86-64's and aarch64's (asm-generic); an unknown syscall is "other".
 * Depends on libc. */
#include "wait_class.h"

#include <stdlib.h>

#if defined(__aarch64__)
enum {
    NR_READ = 63,
    NR_WRITE = 64,
    NR_READV = 65,
    NR_WRITEV = 66,
    NR_PREAD = 67,
    NR_PREADV = 69,
    NR_PSELECT6 = 72,
    NR_PPOLL = 73,
    NR_EPOLL_PWAIT = 22,
    NR_EPOLL_PWAIT2 = 441,
    NR_ACCEPT = 202,
    NR_CONNECT = 203,
    NR_SENDTO = 206,
    NR_RECVFROM = 207,
    NR_SENDMSG = 211,
    NR_RECVMSG = 212,
    NR_ACCEPT4 = 242,
    NR_RECVMMSG = 243,
    NR_NANOSLEEP = 101,
    NR_CLOCK_NANOSLEEP = 115,
    NR_WAIT4 = 260,
    NR_WAITID = 95,
    NR_RT_SIGSUSPEND = 133,
    NR_RT_SIGTIMEDWAIT = 137,
    NR_FUTEX = 98,
    /* absent on aarch64 */
    NR_POLL = -100,
    NR_SELECT = -101,
    NR_EPOLL_WAIT = -102,
    NR_PAUSE = -103
};
#else
enum {
    NR_READ = 0,
    NR_WRITE = 1,
    NR_POLL = 7,
    NR_PREAD = 17,
    NR_READV = 19,
    NR_WRITEV = 20,
    NR_SELECT = 23,
    NR_PAUSE = 34,
    NR_NANOSLEEP = 35,
    NR_CONNECT = 42,
    NR_ACCEPT = 43,
    NR_SENDTO = 44,
    NR_RECVFROM = 45,
    NR_SENDMSG = 46,
    NR_RECVMSG = 47,
    NR_WAIT4 = 61,
    NR_RT_SIGTIMEDWAIT = 128,
    NR_RT_SIGSUSPEND = 130,
    NR_FUTEX = 202,
    NR_CLOCK_NANOSLEEP = 230,
    NR_EPOLL_WAIT = 232,
    NR_WAITID = 247,
    NR_PSELECT6 = 270,
    NR_PPOLL = 271,
    NR_EPOLL_PWAIT = 281,
    NR_ACCEPT4 = 288,
    NR_PREADV = 295,
    NR_RECVMMSG = 299,
    NR_EPOLL_PWAIT2 = 441
};
#endif

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
    return nr == NR_FUTEX;
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
    if (nr == NR_FUTEX) {
        unsigned cmd = (unsigned)args[1] & FUTEX_CMD_MASK;
        if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_LOCK_PI &&
            cmd != FUTEX_WAIT_REQUEUE_PI && cmd != FUTEX_LOCK_PI2)
            return SOP_WC_OTHER; /* a wake or requeue: on its way out */
        return args[3] ? SOP_WC_LOCK_TIMED : SOP_WC_LOCK;
    }
    if (nr == NR_POLL || nr == NR_SELECT || nr == NR_EPOLL_WAIT || nr == NR_PSELECT6 ||
        nr == NR_PPOLL || nr == NR_EPOLL_PWAIT || nr == NR_EPOLL_PWAIT2 || nr == NR_ACCEPT ||
        nr == NR_ACCEPT4 || nr == NR_CONNECT || nr == NR_RECVFROM || nr == NR_RECVMSG ||
        nr == NR_RECVMMSG || nr == NR_SENDTO || nr == NR_SENDMSG)
        return SOP_WC_NET;
    if (nr == NR_READ || nr == NR_WRITE || nr == NR_PREAD || nr == NR_READV || nr == NR_WRITEV ||
        nr == NR_PREADV)
        return SOP_WC_READ;
    if (nr == NR_NANOSLEEP || nr == NR_CLOCK_NANOSLEEP)
        return SOP_WC_TIMER;
    if (nr == NR_WAIT4 || nr == NR_WAITID)
        return SOP_WC_CHILD;
    if (nr == NR_PAUSE || nr == NR_RT_SIGSUSPEND || nr == NR_RT_SIGTIMEDWAIT)
        return SOP_WC_SIGNAL;
    return SOP_WC_OTHER;
}
