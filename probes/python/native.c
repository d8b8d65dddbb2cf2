/* native.c — native stacks with libunwind-ptrace (this file is its only home; loaded with
 * dlopen by the first --native collection, so nothing else maps it): interrupt one
 * thread at a time (PTRACE_SEIZE + PTRACE_INTERRUPT), unwind reading memory with
 * process_vm_readv, detach on every path, then name frames from the objects' ELF symbols
 * (elf.c); and the merge of Python frames in place of the evaluator's C frames. If sopctl
 * dies while a thread is stopped, the kernel detaches it and it runs on.
 * Depends on libunwind-ptrace, elf.c, libc. */
#include "native.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind-ptrace.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "elf.h"
#include "ptrace_wait.h"

/* libunwind, loaded on first use: the functions this file calls. unw_* are macros naming the
 * architecture's symbols (_Ux86_64_step...); XSTR turns the macro into the symbol's name. */
#define STR_(x) #x
#define XSTR(x) STR_(x)
static struct {
    __typeof__(unw_create_addr_space) *create_addr_space;
    __typeof__(unw_destroy_addr_space) *destroy_addr_space;
    __typeof__(unw_set_caching_policy) *set_caching_policy;
    __typeof__(unw_init_remote) *init_remote;
    __typeof__(unw_get_reg) *get_reg;
    __typeof__(unw_step) *step;
    __typeof__(_UPT_create) *upt_create;
    __typeof__(_UPT_destroy) *upt_destroy;
    __typeof__(_UPT_access_mem) *upt_access_mem;
    __typeof__(_UPT_find_proc_info) *upt_find_proc_info;
    unw_accessors_t *upt_accessors;
} U;
static pthread_once_t unw_once = PTHREAD_ONCE_INIT;
static char unw_error[256];

static void unw_load_once(void)
{
    /* libunwind-ptrace refers to the architecture library's symbols without naming it: load
     * that one first, global. The unversioned names are the -dev package's links. */
    static const char *const arch[] = {"libunwind-" XSTR(UNW_TARGET) ".so.8",
                                       "libunwind-generic.so"};
    static const char *const ptr[] = {"libunwind-ptrace.so.0", "libunwind-ptrace.so"};
    void *a = NULL, *p = NULL;
    for (size_t i = 0; i < 2 && !a; i++)
        a = dlopen(arch[i], RTLD_NOW | RTLD_GLOBAL);
    for (size_t i = 0; a && i < 2 && !p; i++)
        p = dlopen(ptr[i], RTLD_NOW | RTLD_LOCAL);
    if (!a || !p) {
        const char *e = dlerror();
        snprintf(unw_error, sizeof unw_error,
                 "--native needs libunwind (with libunwind-ptrace), which cannot be loaded (%s)",
                 e ? e : "not found");
        return;
    }
#define UNW_SYM(lib, field, name)                                                                  \
    do {                                                                                           \
        *(void **)&U.field = dlsym(lib, name);                                                     \
        if (!U.field) {                                                                            \
            snprintf(unw_error, sizeof unw_error, "libunwind lacks %s", name);                     \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    UNW_SYM(a, create_addr_space, XSTR(unw_create_addr_space));
    UNW_SYM(a, destroy_addr_space, XSTR(unw_destroy_addr_space));
    UNW_SYM(a, set_caching_policy, XSTR(unw_set_caching_policy));
    UNW_SYM(a, init_remote, XSTR(unw_init_remote));
    UNW_SYM(a, get_reg, XSTR(unw_get_reg));
    UNW_SYM(a, step, XSTR(unw_step));
    UNW_SYM(p, upt_create, "_UPT_create");
    UNW_SYM(p, upt_destroy, "_UPT_destroy");
    UNW_SYM(p, upt_access_mem, "_UPT_access_mem");
    UNW_SYM(p, upt_find_proc_info, "_UPT_find_proc_info");
    UNW_SYM(p, upt_accessors, "_UPT_accessors");
#undef UNW_SYM
}

#define MAX_NATIVE_FRAMES 256
#define MAX_MAPPINGS 65536
#define MAX_OBJECTS 256
#define STOP_WAIT_MS 2000 /* for one thread to reach its ptrace stop */

typedef struct {
    uint64_t lo, hi, off;
    int obj; /* index in objs, -1 for anonymous */
    bool exec;
} mapping;

typedef struct {
    char path[512];
    sop_mapping file; /* its offset-0 mapping, by which the file is opened */
    bool tried;
    sop_elf elf;
    bool ok;
    uint64_t bias;
    sop_elf_sym *syms;
    size_t nsyms;
    void *upt_lookup; /* a libunwind-ptrace handle kept for this object's unwind tables */
} object;

struct sop_native {
    int pid;
    char proc_root[128];
    unw_addr_space_t as;
    unw_accessors_t acc;
    mapping *maps;
    size_t nmaps;
    object *objs;
    size_t nobjs;
    struct unw_cache_s *cache;
};

/* Memory reads while unwinding (the stopped thread's stack, the objects' .eh_frame): a small
 * direct-mapped cache of pages read with process_vm_readv instead of one PTRACE_PEEKDATA per
 * word. Valid for one thread's unwinding (the stack does not move while it is stopped). */
#define UNW_CACHE_PAGES 32
typedef struct unw_cache_s {
    sop_native *nv;
    int pid;
    uint64_t page[UNW_CACHE_PAGES];
    bool valid[UNW_CACHE_PAGES];
    uint8_t data[UNW_CACHE_PAGES][4096];
} unw_cache;
/* The cache of the unwinding in progress on this thread (libunwind's accessors get no
 * argument of ours): only a pointer is thread-local, the pages live in the sop_native. */
static _Thread_local unw_cache *unw_cur;

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    unw_cache *c = unw_cur;
    if (write || (addr & 7) || !c || c->pid <= 0)
        return U.upt_access_mem(as, addr, val, write, arg);
    uint64_t page = addr & ~(uint64_t)4095;
    size_t slot = (size_t)(page >> 12) % UNW_CACHE_PAGES;
    if (!c->valid[slot] || c->page[slot] != page) {
        struct iovec l = {c->data[slot], 4096}, r = {(void *)(uintptr_t)page, 4096};
        c->valid[slot] = process_vm_readv(c->pid, &l, 1, &r, 1, 0) == 4096;
        c->page[slot] = page;
        if (!c->valid[slot])
            return U.upt_access_mem(as, addr, val, write, arg);
    }
    memcpy(val, c->data[slot] + (addr - page), sizeof *val);
    return 0;
}

/* libunwind-ptrace keeps the unwind tables of one object per handle and re-reads the maps
 * and re-maps the file whenever the next address is in another object; a stack alternating
 * between libc and the interpreter pays that at every frame. Give each object its own handle
 * for the whole collection (they are used for lookups only, never for registers). */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                          int need_unwind_info, void *arg)
{
    sop_native *nv = unw_cur ? unw_cur->nv : NULL;
    if (nv) {
        for (size_t i = 0; i < nv->nmaps; i++) {
            const mapping *m = &nv->maps[i];
            if (ip < m->lo || ip >= m->hi)
                continue;
            if (m->obj < 0)
                break;
            object *o = &nv->objs[m->obj];
            if (!o->upt_lookup)
                o->upt_lookup = U.upt_create(nv->pid);
            if (o->upt_lookup)
                return U.upt_find_proc_info(as, ip, pi, need_unwind_info, o->upt_lookup);
            break;
        }
    }
    return U.upt_find_proc_info(as, ip, pi, need_unwind_info, arg);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_maps(sop_native *nv, const char *text)
{
    size_t cap = 0;
    const char *line = text;
    for (size_t guard = 0; line && *line && guard < MAX_MAPPINGS; guard++) {
        const char *eol = strchr(line, '\n');
        unsigned long long lo, hi, off, ino = 0;
        unsigned dmaj = 0, dmin = 0;
        int pos = -1;
        char perms[8] = "";
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &dmaj, &dmin,
                   &ino, &pos) >= 7) {
            if (nv->nmaps == cap) {
                size_t ncap = cap ? cap * 2 : 256;
                mapping *m = realloc(nv->maps, ncap * sizeof *m);
                if (!m)
                    return -ENOMEM;
                nv->maps = m;
                cap = ncap;
            }
            mapping *m = &nv->maps[nv->nmaps++];
            m->lo = lo;
            m->hi = hi;
            m->off = off;
            m->obj = -1;
            m->exec = perms[2] == 'x';
            const char *p = pos > 0 ? line + pos : NULL;
            const char *end = eol ? eol : (p ? p + strlen(p) : NULL);
            if (p && p < end && *p == '/' && (size_t)(end - p) < sizeof nv->objs[0].path) {
                size_t plen = (size_t)(end - p);
                int found = -1;
                for (size_t i = 0; i < nv->nobjs; i++)
                    if (strlen(nv->objs[i].path) == plen && memcmp(nv->objs[i].path, p, plen) == 0)
                        found = (int)i;
                if (found < 0 && nv->nobjs < MAX_OBJECTS) {
                    object *o = &nv->objs[nv->nobjs];
                    memset(o, 0, sizeof *o);
                    memcpy(o->path, p, plen);
                    o->path[plen] = '\0';
                    found = (int)nv->nobjs++;
                }
                m->obj = found;
                if (found >= 0 && off == 0 && nv->objs[found].bias == 0) {
                    object *o = &nv->objs[found];
                    o->bias = lo; /* fixed up by the ELF's first PT_LOAD */
                    snprintf(o->file.path, sizeof o->file.path, "%s", o->path);
                    o->file.lo = lo;
                    o->file.hi = hi;
                    o->file.dev_major = dmaj;
                    o->file.dev_minor = dmin;
                    o->file.ino = ino;
                }
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return 0;
}

int sop__native_open(int pid, const char *proc_root, const char *maps, sop_native **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    pthread_once(&unw_once, unw_load_once);
    if (unw_error[0]) {
        snprintf(err, errlen, "%s", unw_error);
        return -ELIBACC;
    }
    sop_native *nv = calloc(1, sizeof *nv);
    if (!nv)
        return -ENOMEM;
    nv->pid = pid;
    snprintf(nv->proc_root, sizeof nv->proc_root, "%s", proc_root ? proc_root : "/proc");
    nv->objs = calloc(MAX_OBJECTS, sizeof *nv->objs);
    nv->cache = calloc(1, sizeof *nv->cache);
    nv->acc = *U.upt_accessors;
    nv->acc.access_mem = access_mem;
    nv->acc.find_proc_info = find_proc_info;
    nv->as = U.create_addr_space(&nv->acc, 0);
    if (!nv->objs || !nv->cache || !nv->as || parse_maps(nv, maps ? maps : "") < 0) {
        sop__native_close(nv);
        return -ENOMEM;
    }
    U.set_caching_policy(nv->as, UNW_CACHE_GLOBAL);
    *out = nv;
    return 0;
}

void sop__native_close(sop_native *nv)
{
    if (!nv)
        return;
    if (nv->as)
        U.destroy_addr_space(nv->as);
    for (size_t i = 0; nv->objs && i < nv->nobjs; i++) {
        free(nv->objs[i].syms);
        if (nv->objs[i].upt_lookup)
            U.upt_destroy(nv->objs[i].upt_lookup);
        if (nv->objs[i].ok)
            sop__elf_close(&nv->objs[i].elf);
    }
    free(nv->objs);
    free(nv->cache);
    free(nv->maps);
    free(nv);
}

/* Name ip: "function" from the object's symbols (containing symbol only), else "0x<offset>";
 * lib = basename of the object. */
static void symbolize(sop_native *nv, sop_nframe *f)
{
    const mapping *m = NULL;
    for (size_t i = 0; i < nv->nmaps; i++)
        if (f->ip >= nv->maps[i].lo && f->ip < nv->maps[i].hi) {
            m = &nv->maps[i];
            break;
        }
    snprintf(f->func, sizeof f->func, "0x%llx", (unsigned long long)f->ip);
    if (!m || m->obj < 0)
        return;
    object *o = &nv->objs[m->obj];
    const char *base = strrchr(o->path, '/');
    base = base ? base + 1 : o->path;
    size_t bl = strlen(base) < sizeof f->lib - 1 ? strlen(base) : sizeof f->lib - 1;
    memcpy(f->lib, base, bl);
    f->lib[bl] = '\0';
    if (!o->tried) {
        o->tried = true;
        int r = o->file.hi ? sop__elf_open_mapped(nv->proc_root, nv->pid, &o->file, &o->elf)
                           : sop__elf_open_target(nv->proc_root, nv->pid, o->path, &o->elf);
        if (r == 0) {
            o->ok = true;
            o->bias = sop__elf_bias(&o->elf, o->bias);
            if (sop__elf_func_symbols(&o->elf, &o->syms, &o->nsyms) < 0)
                o->nsyms = 0;
        }
    }
    uint64_t fileoff = f->ip - m->lo + m->off;
    snprintf(f->func, sizeof f->func, "0x%llx", (unsigned long long)fileoff);
    if (!o->ok)
        return;
    const sop_elf_sym *s = sop__elf_sym_at(o->syms, o->nsyms, f->ip - o->bias);
    if (s)
        snprintf(f->func, sizeof f->func, "%s", s->name);
}

/* Unwind the stopped thread: instruction pointers only (names come after the detach). */
static int unwind_ips(sop_native *nv, int tid, sop_nframe *fr, size_t *n, char *err, size_t errlen)
{
    void *upt = U.upt_create(tid);
    if (!upt) {
        snprintf(err, errlen, "_UPT_create failed");
        return -ENOMEM;
    }
    nv->cache->pid = nv->pid;
    nv->cache->nv = nv;
    memset(nv->cache->valid, 0, sizeof nv->cache->valid);
    unw_cur = nv->cache;
    unw_cursor_t cur;
    int rc = 0;
    size_t k = 0;
    if (U.init_remote(&cur, nv->as, upt) < 0) {
        snprintf(err, errlen, "unw_init_remote failed");
        rc = -EIO;
    } else {
        do {
            unw_word_t ip = 0;
            if (U.get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
                break;
            /* Return addresses point after the call: look the caller up at ip - 1. */
            fr[k].ip = k == 0 ? ip : ip - 1;
            fr[k].py_index = -1;
            k++;
        } while (k < MAX_NATIVE_FRAMES && U.step(&cur) > 0);
    }
    unw_cur = NULL;
    U.upt_destroy(upt);
    *n = k;
    return rc;
}

int sop__native_thread(sop_native *nv, int tid, sop_native_stopped_fn fn, void *ctx,
                       sop_nframe **out, size_t *n, double *pause_ms, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    *pause_ms = 0;
    sop_nframe *fr = NULL;
    if (nv && (fr = calloc(MAX_NATIVE_FRAMES, sizeof *fr)) == NULL)
        return -ENOMEM;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
        int e = errno;
        snprintf(err, errlen, "PTRACE_SEIZE %d: %s", tid, sop__strerror(e));
        free(fr);
        return -e;
    }
    double t0 = now_ms();
    int rc = 0;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
        rc = -errno;
        snprintf(err, errlen, "PTRACE_INTERRUPT %d: %s", tid, sop__strerror(-rc));
        goto detach;
    }
    for (int tries = 0;; tries++) {
        sop_stop_kind kind;
        int sig = 0;
        rc = sop__ptrace_wait_stop(tid, STOP_WAIT_MS, &kind, &sig);
        if (rc == -ESRCH) {
            snprintf(err, errlen, "thread %d exited", tid);
            ptrace(PTRACE_DETACH, tid, 0, 0);
            free(fr);
            return -ESRCH;
        }
        if (rc < 0) {
            snprintf(err, errlen, "thread %d: no ptrace stop: %s", tid, sop__strerror(-rc));
            goto detach;
        }
        if (kind == SOP_STOP_EVENT)
            break; /* our interrupt (or a group-stop: still all the same) */
        /* A signal for the thread came first: pass it on, wait again. */
        if (tries >= 16 || ptrace(PTRACE_CONT, tid, 0, sig) < 0) {
            rc = -EIO;
            snprintf(err, errlen, "thread %d: could not reach the interrupt stop", tid);
            goto detach;
        }
    }
    t0 = now_ms();
    if (fn)
        fn(ctx, tid);
    rc = nv ? unwind_ips(nv, tid, fr, n, err, errlen) : 0; /* no nv: only fn, stopped */
detach:
    if (ptrace(PTRACE_DETACH, tid, 0, 0) < 0 && rc == 0) {
        rc = -errno;
        snprintf(err, errlen, "PTRACE_DETACH %d: %s", tid, sop__strerror(-rc));
    }
    *pause_ms = now_ms() - t0;
    if (rc < 0) {
        free(fr);
        *n = 0;
        return rc;
    }
    for (size_t i = 0; nv && i < *n; i++)
        symbolize(nv, &fr[i]);
    *out = fr;
    return 0;
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
                f->py_index = (int)p;
            } while (!py[p++].entry && p < npy);
            continue;
        }
        m[k++] = nat[i];
    }
    while (p < npy) { /* Python frames no evaluator frame was found for (unwinding stopped) */
        sop_nframe *f = &m[k++];
        snprintf(f->func, sizeof f->func, "%s", py[p].func);
        snprintf(f->lib, sizeof f->lib, "python");
        f->py_index = (int)p++;
    }
    *out = m;
    *nout = k;
    return 0;
}
