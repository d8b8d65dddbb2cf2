/* native.c — native stacks with libunwind-ptrace (this file is its only home): interrupt one
 * thread at a time (PTRACE_SEIZE + PTRACE_INTERRUPT), unwind, detach on every path; and the
 * merge of Python frames in place of the evaluator's C frames. If sopctl dies while a thread
 * is stopped, the kernel detaches it and it runs on. Depends on libunwind-ptrace, libc. */
#include "native.h"

#include <errno.h>
#include <libunwind-ptrace.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_NATIVE_FRAMES 256

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Basename of the mapping holding ip in the maps text, into out. */
static void lib_of(const char *maps, uint64_t ip, char *out, size_t cap)
{
    out[0] = '\0';
    const char *line = maps;
    for (int guard = 0; line && *line && guard < 1000000; guard++) {
        unsigned long long lo, hi;
        int pos = -1;
        const char *eol = strchr(line, '\n');
        if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &pos) >= 2 && ip >= lo &&
            ip < hi) {
            if (pos > 0 && (!eol || line + pos < eol)) {
                const char *p = line + pos, *end = eol ? eol : p + strlen(p);
                const char *b = p;
                for (const char *q = p; q < end; q++)
                    if (*q == '/')
                        b = q + 1;
                size_t n = (size_t)(end - b);
                if (n >= cap)
                    n = cap - 1;
                memcpy(out, b, n);
                out[n] = '\0';
            }
            return;
        }
        line = eol ? eol + 1 : NULL;
    }
}

static int unwind(int tid, const char *maps, sop_nframe **out, size_t *n, char *err,
                  size_t errlen)
{
    unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
    if (!as) {
        snprintf(err, errlen, "unw_create_addr_space failed");
        return -ENOMEM;
    }
    void *upt = _UPT_create(tid);
    if (!upt) {
        unw_destroy_addr_space(as);
        snprintf(err, errlen, "_UPT_create failed");
        return -ENOMEM;
    }
    int rc = 0;
    unw_cursor_t cur;
    sop_nframe *fr = calloc(MAX_NATIVE_FRAMES, sizeof *fr);
    size_t k = 0;
    if (!fr) {
        rc = -ENOMEM;
    } else if (unw_init_remote(&cur, as, upt) < 0) {
        snprintf(err, errlen, "unw_init_remote failed");
        rc = -EIO;
    } else {
        do {
            unw_word_t ip = 0, off = 0;
            if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
                break;
            sop_nframe *f = &fr[k++];
            f->ip = ip;
            f->py_index = -1;
            if (unw_get_proc_name(&cur, f->func, sizeof f->func, &off) < 0)
                snprintf(f->func, sizeof f->func, "0x%llx", (unsigned long long)ip);
            lib_of(maps, ip, f->lib, sizeof f->lib);
        } while (k < MAX_NATIVE_FRAMES && unw_step(&cur) > 0);
    }
    _UPT_destroy(upt);
    unw_destroy_addr_space(as);
    if (rc < 0) {
        free(fr);
        return rc;
    }
    *out = fr;
    *n = k;
    return 0;
}

int sop__native_thread(int pid, int tid, sop_native_stopped_fn fn, void *ctx, const char *maps,
                       sop_nframe **out, size_t *n, double *pause_ms, char *err, size_t errlen)
{
    (void)pid;
    *out = NULL;
    *n = 0;
    *pause_ms = 0;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
        int e = errno;
        snprintf(err, errlen, "PTRACE_SEIZE %d: %s", tid, strerror(e));
        return -e;
    }
    double t0 = now_ms();
    int rc = 0;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
        rc = -errno;
        snprintf(err, errlen, "PTRACE_INTERRUPT %d: %s", tid, strerror(-rc));
        goto detach;
    }
    int status;
    for (int tries = 0;; tries++) {
        pid_t w = waitpid(tid, &status, __WALL);
        if (w < 0) {
            if (errno == EINTR && tries < 100)
                continue;
            rc = -errno;
            snprintf(err, errlen, "waitpid %d: %s", tid, strerror(-rc));
            goto detach;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            snprintf(err, errlen, "thread %d exited", tid);
            return -ESRCH; /* nothing to detach */
        }
        if (WIFSTOPPED(status)) {
            if ((status >> 16) == PTRACE_EVENT_STOP)
                break; /* our interrupt */
            /* A signal arrived first: let it go on, wait for the interrupt stop. */
            int sig = WSTOPSIG(status);
            if (tries >= 16 || ptrace(PTRACE_CONT, tid, 0, sig) < 0) {
                rc = -EIO;
                snprintf(err, errlen, "thread %d: could not reach the interrupt stop", tid);
                goto detach;
            }
            continue;
        }
    }
    t0 = now_ms();
    if (fn)
        fn(ctx, tid);
    rc = unwind(tid, maps, out, n, err, errlen);
detach:
    if (ptrace(PTRACE_DETACH, tid, 0, 0) < 0 && rc == 0) {
        rc = -errno;
        snprintf(err, errlen, "PTRACE_DETACH %d: %s", tid, strerror(-rc));
    }
    *pause_ms = now_ms() - t0;
    return rc;
}

static bool is_eval_frame(const char *f)
{
    return strcmp(f, "_PyEval_EvalFrameDefault") == 0 || strcmp(f, "_PyEval_EvalFrame") == 0;
}

int sop__native_merge(const sop_nframe *nat, size_t nn, const sop_pyframe *py, size_t npy,
                      sop_nframe **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    sop_nframe *m = calloc(nn + npy + 1, sizeof *m);
    if (!m)
        return -ENOMEM;
    size_t k = 0, p = 0;
    for (size_t i = 0; i < nn; i++) {
        if (is_eval_frame(nat[i].func) && p < npy) {
            do {
                sop_nframe *f = &m[k++];
                snprintf(f->func, sizeof f->func, "%s", py[p].func);
                snprintf(f->lib, sizeof f->lib, "python");
                f->ip = 0;
                f->py_index = (int)p;
            } while (!py[p++].entry && p < npy);
            continue;
        }
        m[k++] = nat[i];
    }
    while (p < npy) { /* Python frames no evaluator frame was found for */
        sop_nframe *f = &m[k++];
        snprintf(f->func, sizeof f->func, "%s", py[p].func);
        snprintf(f->lib, sizeof f->lib, "python");
        f->py_index = (int)p++;
    }
    *out = m;
    *nout = k;
    return 0;
}
