/* syscall_nr.h — the numbers of the syscalls sop classifies a sleeping thread by
 * (/proc/PID/task/TID/syscall's first field): x86-64's, and aarch64's (asm-generic) where the
 * build is for it. One table for the wait classes (wait_class.c) and the GPU waits
 * (engine/sample/gpu_wait.c). */
#ifndef SOP_SYSCALL_NR_H
#define SOP_SYSCALL_NR_H

#if defined(__aarch64__)
enum {
    SOP_NR_EPOLL_PWAIT = 22,
    SOP_NR_IOCTL = 29,
    SOP_NR_READ = 63,
    SOP_NR_WRITE = 64,
    SOP_NR_READV = 65,
    SOP_NR_WRITEV = 66,
    SOP_NR_PREAD = 67,
    SOP_NR_PREADV = 69,
    SOP_NR_PSELECT6 = 72,
    SOP_NR_PPOLL = 73,
    SOP_NR_WAITID = 95,
    SOP_NR_FUTEX = 98,
    SOP_NR_NANOSLEEP = 101,
    SOP_NR_CLOCK_NANOSLEEP = 115,
    SOP_NR_SCHED_YIELD = 124,
    SOP_NR_RT_SIGSUSPEND = 133,
    SOP_NR_RT_SIGTIMEDWAIT = 137,
    SOP_NR_ACCEPT = 202,
    SOP_NR_CONNECT = 203,
    SOP_NR_SENDTO = 206,
    SOP_NR_RECVFROM = 207,
    SOP_NR_SENDMSG = 211,
    SOP_NR_RECVMSG = 212,
    SOP_NR_ACCEPT4 = 242,
    SOP_NR_RECVMMSG = 243,
    SOP_NR_WAIT4 = 260,
    SOP_NR_EPOLL_PWAIT2 = 441,
    /* absent on aarch64 (asm-generic): numbers no syscall has */
    SOP_NR_EPOLL_WAIT = -100,
    SOP_NR_PAUSE = -101,
    SOP_NR_POLL = -102,
    SOP_NR_SELECT = -103,
};
#else /* x86-64 */
enum {
    SOP_NR_READ = 0,
    SOP_NR_WRITE = 1,
    SOP_NR_POLL = 7,
    SOP_NR_IOCTL = 16,
    SOP_NR_PREAD = 17,
    SOP_NR_READV = 19,
    SOP_NR_WRITEV = 20,
    SOP_NR_SELECT = 23,
    SOP_NR_SCHED_YIELD = 24,
    SOP_NR_PAUSE = 34,
    SOP_NR_NANOSLEEP = 35,
    SOP_NR_CONNECT = 42,
    SOP_NR_ACCEPT = 43,
    SOP_NR_SENDTO = 44,
    SOP_NR_RECVFROM = 45,
    SOP_NR_SENDMSG = 46,
    SOP_NR_RECVMSG = 47,
    SOP_NR_WAIT4 = 61,
    SOP_NR_RT_SIGTIMEDWAIT = 128,
    SOP_NR_RT_SIGSUSPEND = 130,
    SOP_NR_FUTEX = 202,
    SOP_NR_CLOCK_NANOSLEEP = 230,
    SOP_NR_EPOLL_WAIT = 232,
    SOP_NR_WAITID = 247,
    SOP_NR_PSELECT6 = 270,
    SOP_NR_PPOLL = 271,
    SOP_NR_EPOLL_PWAIT = 281,
    SOP_NR_ACCEPT4 = 288,
    SOP_NR_PREADV = 295,
    SOP_NR_RECVMMSG = 299,
    SOP_NR_EPOLL_PWAIT2 = 441,
};
#endif

#endif
