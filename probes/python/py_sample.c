/* py_sample.c — repeated sampling of a CPython process (engine/sample/sampler.c): the runtime found
 * once at open (py_runtime.c), then each tick re-reads every thread's frames with the walker of
 * py_walk.c, the GIL holder, the GC state and each thread's OS state. Never stops the target.
 * Depends on libc, py_walk_int.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../procfs.h"
#include "../wait_class.h"
#include "../zalloc.h"
#include "cpython.h"
#include "py_names.h"
#include "py_runtime.h"
#include "py_walk_int.h"

#define SAMPLER_TID_CACHE 256u /* power of two: thread state address -> OS tid */
#define GIL_STRUCT_BYTES 256u  /* struct _gil_runtime_state: locks and condvars it sleeps on */
#define GPU_FDS_MAX 64
#define RECHECK_MAX 16 /* threads looked at again per tick (sop__python_recheck) */

struct sop_pysampler {
    walker w;
    sop_python *py; /* owns the string pool of the cached code objects */
    sop_pythread scratch;
    sop_addr_set tset; /* the thread states of one tick's list */
    uint64_t *tstates;
    struct {
        uint64_t ts, thread_id;
        int tid;
        int stat_fd; /* /proc/PID/task/TID/stat kept open (pread per tick); -1 none */
        int sys_fd;  /* /proc/PID/task/TID/syscall, opened when first needed; -1 none */
        char name[64];
    } tids[SAMPLER_TID_CACHE];
    int gpu_fds[GPU_FDS_MAX];
    size_t ngpu_fds;
    /* the threads the last tick saw holding the GIL, or running without it (state R, not the
     * holder), in an interpreter whose GIL could be read: looked at again by sop__python_recheck */
    struct {
        uint64_t ts, interp;
        int tid;
        bool held;
    } rechk[RECHECK_MAX];
    size_t nrechk;
};

/* The address range of the GIL struct of `interp` (futex words of its mutex and condvars). */
static uint64_t gil_base(walker *w, uint64_t interp)
{
    const sop_pylayout *L = &w->L;
    if (L->is_ceval_gil_ptr) {
        uint64_t base = 0;
        if (sop__rmem_read_direct(&w->mem, interp + L->is_ceval_gil_ptr, &base, 8) < 0)
            return 0;
        return base;
    }
    return w->runtime + L->rt_gil_locked - L->gil_locked;
}

/* The syscall the thread sleeps in and its arguments, from /proc/PID/task/TID/syscall
 * (wait_class.c parses it). *fd caches the file between ticks. Returns the number, or -1. */
static long read_syscall(const walker *w, int tid, int *fd, unsigned long long args[6])
{
    char buf[256];
    for (int i = 0; i < 6; i++)
        args[i] = 0;
    if (*fd < 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d/task/%d/syscall", w->proc_root, w->pid, tid);
        *fd = open(path, O_RDONLY | O_CLOEXEC);
        if (*fd < 0)
            return -1;
    }
    ssize_t got = pread(*fd, buf, sizeof buf - 1, 0);
    if (got <= 0)
        return -1;
    buf[got] = '\0';
    return sop__syscall_parse(buf, args);
}

void sop__python_sample_gpu_fds(sop_pysampler *s, const int *fds, size_t n)
{
    s->ngpu_fds = 0;
    for (size_t i = 0; i < n && s->ngpu_fds < GPU_FDS_MAX; i++)
        s->gpu_fds[s->ngpu_fds++] = fds[i];
}

/* OS state letter from an open /proc/.../stat; '?' when unreadable (the task is gone). */
static char stat_state(int fd, int64_t *majflt, int64_t *minflt, int64_t *cpu_ticks)
{
    char buf[512];
    *majflt = *minflt = *cpu_ticks = SOP_NA;
    if (fd < 0)
        return '?';
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || !rp[2])
        return '?';
    /* minflt is the 8th field after the comm and majflt the 10th: state ppid pgrp session tty
     * tpgid flags minflt cminflt majflt (the sampler counts a sample "in a fault" when majflt
     * rose since the last, and "touching fresh memory" when minflt rose by many pages) */
    const char *p = rp + 2;
    for (int f = 1; f < 10 && *p; f++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
        if (f == 7 && *p >= '0' && *p <= '9') {
            const char *q = p;
            *minflt = sop__parse_i64(&q);
        }
    }
    if (*p >= '0' && *p <= '9')
        *majflt = sop__parse_i64(&p);
    /* then cmajflt utime stime: the CPU time it has run (whether it ran between two samples) */
    int64_t v[3];
    for (int f = 0; f < 3; f++)
        if ((v[f] = sop__parse_i64(&p)) == SOP_NA)
            return rp[2];
    *cpu_ticks = v[1] + v[2];
    return rp[2];
}

/* The OS tid and threading name of the thread state at ts, read once per thread. */
static size_t sampler_tid(sop_pysampler *s, uint64_t ts, const sop_pythread *t, int64_t raw_tid,
                          uint64_t boot_frame, bool sub)
{
    size_t h = hash_ptr(ts) & (SAMPLER_TID_CACHE - 1);
    if (s->tids[h].ts == ts && s->tids[h].thread_id == t->thread_id && s->tids[h].tid)
        return h;
    walker *w = &s->w;
    int tid = 0;
    if (raw_tid > 0 && raw_tid < INT32_MAX)
        tid = (int)raw_tid;
    if (!tid && t->thread_id && w->L.ts_native_thread_id == 0) {
        int32_t v = 0;
        if (sop__rmem_read(&w->mem, t->thread_id + GLIBC_PTHREAD_TID_OFFSET, &v, sizeof v) == 0 &&
            v > 0)
            tid = v;
    }
    if (tid > 0 && !sop__pywalk_task_exists(w, tid))
        tid = 0;                   /* another PID namespace, or torn: unknown rather than wrong */
    if (sub && w->L.minor <= 12) { /* a borrowed thread state: see tid_from_stacks */
        int unscanned;             /* no retry here: an unknown tid is looked for again next tick */
        tid = sop__pywalk_tid_from_stacks_once(w, ts, tid, &unscanned);
    }
    s->tids[h].ts = ts;
    s->tids[h].thread_id = t->thread_id;
    s->tids[h].tid = tid;
    s->tids[h].name[0] = '\0';
    if (s->tids[h].stat_fd >= 0)
        close(s->tids[h].stat_fd);
    if (s->tids[h].sys_fd >= 0)
        close(s->tids[h].sys_fd);
    s->tids[h].stat_fd = s->tids[h].sys_fd = -1;
    if (tid > 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d/task/%d/stat", w->proc_root, w->pid, tid);
        s->tids[h].stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    uint64_t self = 0;
    if (boot_frame && sop__rmem_u64(&w->mem, boot_frame + w->L.frame_localsplus, &self) == 0 &&
        (self = sop__pywalk_ref(&w->L, self)) != 0)
        (void)sop__py_instance_str_attr(&w->mem, &w->L, self, "_name", s->tids[h].name,
                                        sizeof s->tids[h].name);
    if (!s->tids[h].name[0] && tid == w->pid)
        snprintf(s->tids[h].name, sizeof s->tids[h].name, "MainThread");
    if (!s->tids[h].name[0] && tid > 0) /* not a threading thread: the kernel's name */
        sop__pywalk_task_comm(w, tid, s->tids[h].name, sizeof s->tids[h].name);
    return h;
}

int sop__python_sample_gc(sop_pysampler *s, sop_pygc *out)
{
    walker *w = &s->w;
    out->collecting = SOP_NA;
    for (int g = 0; g < 3; g++)
        out->collections[g] = SOP_NA;
    out->gil_switches = out->gil_interval_us = SOP_NA;
    uint64_t interp;
    int rc = sop__rmem_read_direct(&w->mem, w->runtime + w->L.rt_interp_head, &interp, 8);
    if (rc < 0)
        return rc;
    if (!interp)
        return -ENODATA;
    if (sop__pywalk_gil_switches(w, interp, &out->gil_switches, &out->gil_interval_us) == -ESRCH)
        return -ESRCH;
    uint8_t b[SOP_PYLAYOUT_GC_READ];
    if ((rc = sop__rmem_read_direct(&w->mem, sop__pywalk_gc_addr(w, interp), b, sizeof b)) < 0)
        return rc;
    int32_t co = rd32(b, w->L.gc_collecting);
    if (co != 0 && co != 1)
        return -EINVAL;
    out->collecting = co;
    sop__pywalk_gc_collections(w, b, out->collections);
    return 0;
}

int sop__python_open(int pid, const char *proc_root, sop_pysampler **out, sop_missing *missing)
{
    return sop__python_open_with(NULL, pid, proc_root, out, missing);
}

int sop__python_open_with(const sop_pyruntime *rt, int pid, const char *proc_root,
                          sop_pysampler **out, sop_missing *missing)
{
    *out = NULL;
    sop_pysampler *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    walker *w = &s->w;
    w->pid = pid;
    w->proc_root = proc_root ? proc_root : "/proc";
    w->missing = missing;
    if (rt && sop__pyruntime_current(rt, pid, w->proc_root))
        w->found = rt; /* the maps are read only to find it */
    int rc;
    if (!w->found) {
        char path[300];
        size_t len;
        snprintf(path, sizeof path, "%s/%d/maps", w->proc_root, sop__live_task(w->proc_root, pid));
        rc = sop__read_file_at(AT_FDCWD, path, SOP_MAPS_MAX_BYTES, &w->maps_own, &len);
        w->maps = w->maps_own;
        if (rc < 0) {
            free(s);
            return rc == -ENOENT ? -ESRCH : rc;
        }
    }
    s->py = calloc(1, sizeof *s->py);
    w->py = s->py;
    w->code_index = calloc(CODE_SLOTS, sizeof *w->code_index);
    int sets_rc = sop__addr_set_init(&w->frame_set, FRAME_SET_SLOTS);
    w->chain = sop__zalloc(CHAIN_MAX, sizeof *w->chain);
    w->chain_len = sop__zalloc(CHAIN_MAX, sizeof *w->chain_len);
    w->max_attempts = SAMPLE_WALK_ATTEMPTS;
    if (sets_rc == 0)
        sets_rc = sop__addr_set_init(&s->tset, THREAD_SET_SLOTS);
    s->tstates = sop__zalloc(MAX_THREADS, sizeof *s->tstates);
    for (size_t i = 0; i < SAMPLER_TID_CACHE; i++)
        s->tids[i].stat_fd = s->tids[i].sys_fd = -1;
    if (sets_rc < 0 || !s->py || !w->code_index || !w->chain || !w->chain_len || !s->tstates ||
        sop__rmem_open(&w->mem, pid, w->proc_root) < 0) {
        rc = -ENOMEM;
        goto fail;
    }
    rc = sop__pywalk_use_runtime(w, w->found, s->py);
    w->found = NULL; /* the caller's: not kept past the open */
    free(w->maps_own);
    w->maps_own = NULL;
    w->maps = NULL;
    if (rc == 0) {
        *out = s;
        return 0;
    }
fail:
    sop__python_close(s);
    return rc;
}

int sop__python_sample(sop_pysampler *s, sop_pysample_cb cb, void *ctx)
{
    walker *w = &s->w;
    const sop_pylayout *L = &w->L;
    sop__rmem_flush(&w->mem);
    uint64_t interp;
    int rc = sop__rmem_u64(&w->mem, w->runtime + L->rt_interp_head, &interp);
    if (rc < 0)
        return rc;
    /* The main interpreter (last of the list) first, so an OS thread that also runs a
     * subinterpreter is first seen, and named, through its threading thread. */
    uint64_t interps[MAX_INTERPS];
    int ninterps = 0;
    while (interp && ninterps < MAX_INTERPS) {
        interps[ninterps++] = interp;
        if (sop__rmem_u64(&w->mem, interp + L->is_next, &interp) < 0)
            break;
    }
    int seen = 0;
    s->nrechk = 0;
    for (int ni = ninterps - 1; ni >= 0; ni--) {
        interp = interps[ni];
        uint64_t holder = sop__pywalk_gil_holder(w, interp), gbase = gil_base(w, interp);
        uint64_t ts = 0;
        size_t nts = 0;
        if ((rc = sop__rmem_u64(&w->mem, interp + L->is_tstate_head, &ts)) < 0)
            return rc;
        int added = 1;
        while (ts && nts < MAX_THREADS) {
            if ((added = sop__addr_set_add(&s->tset, ts)) <= 0)
                break; /* torn list: what was read so far (or out of memory) */
            s->tstates[nts++] = ts;
            if (sop__rmem_u64(&w->mem, ts + L->ts_next, &ts) < 0)
                break;
        }
        sop__addr_set_clear(&s->tset); /* empty for the next tick */
        if (added < 0)
            return -ENOMEM;
        bool sub = ni != ninterps - 1;
        for (size_t k = 0; k < nts; k++) {
            uint64_t tsa = s->tstates[nts - 1 - k]; /* oldest (main) first */
            thread_job j = {w, tsa, &s->scratch, 0, 0, 0, "", 0, false};
            sop__pywalk_with_retry(&j, 0);
            if (j.rc == -ESRCH)
                return -ESRCH;
            if (j.rc == -ENOMEM)
                return -ENOMEM;
            sop_pysample smp;
            memset(&smp, 0, sizeof smp);
            size_t h = sampler_tid(s, tsa, &s->scratch, j.raw_tid, j.boot_frame, sub);
            smp.tid = s->tids[h].tid;
            smp.name = s->tids[h].name;
            smp.gil = holder && holder == tsa;
            smp.majflt = smp.minflt = smp.cpu_ticks = SOP_NA;
            smp.state = smp.tid > 0 ? stat_state(s->tids[h].stat_fd, &smp.majflt, &smp.minflt,
                                                 &smp.cpu_ticks)
                                    : '?';
            smp.syscall_nr = -1;
            if ((smp.gil || smp.state == 'R') && smp.tid > 0 && gbase && s->nrechk < RECHECK_MAX) {
                s->rechk[s->nrechk].ts = tsa;
                s->rechk[s->nrechk].interp = interp;
                s->rechk[s->nrechk].held = smp.gil;
                s->rechk[s->nrechk++].tid = smp.tid;
            }
            if (!smp.gil && smp.state != 'R' && smp.tid > 0) {
                unsigned long long args[6];
                smp.syscall_nr = read_syscall(w, smp.tid, &s->tids[h].sys_fd, args);
                unsigned long long a0 = args[0];
                /* asleep in futex(2): on an address in the GIL struct, or elsewhere (a lock, a
                 * condition, a semaphore, a queue) */
                bool futex = sop__syscall_is_futex(smp.syscall_nr);
                smp.gil_wait = futex && gbase && a0 >= gbase && a0 < gbase + GIL_STRUCT_BYTES;
                smp.futex_wait = futex && !smp.gil_wait;
                smp.futex_addr = smp.futex_wait ? a0 : 0;
                smp.wait = smp.gil_wait ? SOP_WC_GIL : sop__wait_classify(smp.syscall_nr, args);
                for (size_t g = 0; g < s->ngpu_fds && !futex && smp.syscall_nr >= 0; g++)
                    if (a0 == (unsigned long long)s->gpu_fds[g])
                        smp.gpu_fd = true;
            }
            smp.frames = s->scratch.frames;
            smp.nframes = s->scratch.nframes;
            smp.torn = j.rc == -EAGAIN;
            smp.retries = j.retries;
            cb(ctx, &smp);
            seen++;
        }
    }
    return seen;
}

size_t sop__python_recheck_pending(const sop_pysampler *s)
{
    return s ? s->nrechk : 0;
}

int sop__python_recheck(sop_pysampler *s, sop_pyrecheck_cb cb, void *ctx)
{
    uint64_t interp = 0, holder = 0;
    for (size_t i = 0; cb && i < s->nrechk; i++) {
        if (i == 0 || s->rechk[i].interp != interp) { /* one holder read per interpreter */
            interp = s->rechk[i].interp;
            holder = sop__pywalk_gil_holder(&s->w, interp);
        }
        cb(ctx, s->rechk[i].tid, s->rechk[i].held, holder && holder == s->rechk[i].ts);
    }
    int n = (int)s->nrechk;
    s->nrechk = 0;
    return n;
}

void sop__python_share_cache(sop_pysampler *s, sop_pysampler *with)
{
    if (s && with && s != with)
        sop__rmem_share(&s->w.mem, &with->w.mem);
}

void sop__python_close(sop_pysampler *s)
{
    if (!s)
        return;
    walker *w = &s->w;
    sop__pywalk_free_codes(w);
    sop__addr_set_free(&w->frame_set);
    sop__zfree(w->chain);
    sop__zfree(w->chain_len);
    free(w->maps_own);
    sop__rmem_close(&w->mem);
    free(s->scratch.frames);
    sop__addr_set_free(&s->tset);
    sop__zfree(s->tstates);
    for (size_t i = 0; i < SAMPLER_TID_CACHE; i++) {
        if (s->tids[i].stat_fd >= 0)
            close(s->tids[i].stat_fd);
        if (s->tids[i].sys_fd >= 0)
            close(s->tids[i].sys_fd);
    }
    sop__python_free(s->py);
    free(s);
}
