/* wait_class.h — what a sleeping thread waits on, from the syscall it sleeps in
 * (/proc/PID/task/TID/syscall): another thread of the process (a futex: a lock, a condition, a
 * queue, a future), or something outside it (a socket or pipe, a file, a timer, a child, a
 * signal). Depends on nothing. */
#ifndef SOP_WAIT_CLASS_H
#define SOP_WAIT_CLASS_H

typedef enum {
    SOP_WC_NONE = 0,   /* not asleep in a syscall (running), or unread */
    SOP_WC_GIL,        /* a futex in the GIL's struct (set by the sampler, which knows it) */
    SOP_WC_LOCK,       /* a futex with no timeout: only another thread can wake it */
    SOP_WC_LOCK_TIMED, /* a futex with a timeout: it wakes by itself */
    SOP_WC_NET,        /* poll/select/epoll, accept, connect, recv, send: a socket or pipe */
    SOP_WC_READ,       /* read/write family: a pipe, a socket, a terminal or a file */
    SOP_WC_TIMER,      /* nanosleep, clock_nanosleep */
    SOP_WC_CHILD,      /* wait4, waitid */
    SOP_WC_SIGNAL,     /* pause, sigsuspend, sigtimedwait */
    SOP_WC_OTHER,      /* another syscall */
    SOP_WC_N
} sop_wait_class;

/* "none", "gil", "lock", "lock_timed", "net", "read", "timer", "child", "signal", "other". */
const char *sop__wait_class_name(sop_wait_class c);

/* Parses the text of /proc/PID/task/TID/syscall ("nr a0 a1 a2 a3 a4 a5 sp pc", hex args;
 * "running" or "-1 sp pc" when in none): the syscall number, its first six arguments in args
 * (zeros when absent). -1 when in none or unparsable. */
long sop__syscall_parse(const char *text, unsigned long long args[6]);

/* The class of a thread asleep in syscall nr with args (this architecture's numbers); the
 * GIL is not told apart here. SOP_WC_NONE for nr < 0. */
sop_wait_class sop__wait_classify(long nr, const unsigned long long args[6]);

/* Is nr futex(2)? */
int sop__syscall_is_futex(long nr);

#endif
