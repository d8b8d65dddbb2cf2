/* py_walk.c — sop__python_collect: find the CPython runtime of a process from outside (ELF
 * symbols via elf.c, layouts via py_layouts.c) and walk interpreters -> thread states ->
 * frames with remote_mem.c, never stopping the target (native.c does, with SOP_PY_NATIVE).
 * Every loop is bounded; a torn read is retried once, then reported. Depends on libc. */
#include "python.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "../procfs.h"
#include "elf.h"
#include "linetable.h"
#include "native.h"
#include "py_layouts.h"
#include "remote_mem.h"

#define MAX_INTERPS 64
#define MAX_THREADS 4096
#define MAX_FRAMES 2048
#define MAX_LINETABLE_BYTES (1u << 20)
#define CODE_SLOTS 4096u /* power of two */
#define FRAME_SET_SLOTS 8192u
#define THREAD_SET_SLOTS 16384u
#define MAPS_MAX_BYTES (16u << 20)
/* glibc (2.26-2.39, x86-64): offsetof(struct pthread, tid); pthread_t is the address of
 * struct pthread. Checked by experiment against threading.get_native_id() on Debian 12. */
#define GLIBC_PTHREAD_TID_OFFSET 0x2d0

typedef struct {
    uint64_t addr; /* 0 = empty */
    char func[128];
    char file[512];
    int firstlineno;
    uint8_t *lines;
    size_t nlines;
} code_entry;

typedef struct {
    int pid;
    const char *proc_root;
    sop_rmem mem;
    sop_pylayout L;
    uint64_t runtime;
    uint64_t code_type; /* &PyCode_Type in the target; 0 when unknown */
    code_entry *codes;
    size_t ncodes;
    uint64_t *frame_set;
    sop_missing *missing;
    char *maps;
} walker;

/* ---- small helpers ------------------------------------------------------------------- */

static uint64_t rd64(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static int32_t rd32(const uint8_t *b, uint32_t off)
{
    int32_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static size_t hash_ptr(uint64_t p) { return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ull >> 20); }

/* Add p to an open-addressing set of `cap` slots; false when already there (or full). */
static bool set_add(uint64_t *set, size_t cap, uint64_t p)
{
    size_t i = hash_ptr(p) & (cap - 1);
    for (size_t k = 0; k < cap; k++, i = (i + 1) & (cap - 1)) {
        if (set[i] == p)
            return false;
        if (set[i] == 0) {
            set[i] = p;
            return true;
        }
    }
    return false;
}

static bool task_exists(const walker *w, int tid)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task/%d", w->proc_root, w->pid, tid);
    return access(path, F_OK) == 0;
}

/* OS state letter of a thread from /proc/PID/task/TID/stat; '?' when unreadable. */
static char task_state(const walker *w, int tid)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/%d/task/%d/stat", w->proc_root, w->pid, tid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return '?';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || !rp[2])
        return '?';
    return rp[2];
}

/* ---- code objects ------------------------------------------------------------------- */

static void free_codes(walker *w)
{
    if (!w->codes)
        return;
    for (size_t i = 0; i < CODE_SLOTS; i++)
        free(w->codes[i].lines);
    free(w->codes);
    w->codes = NULL;
}

/* The cached decoding of the code object at `code`, or NULL with *err set. */
static const code_entry *resolve_code(walker *w, uint64_t code, int *err)
{
    size_t i = hash_ptr(code) & (CODE_SLOTS - 1);
    for (size_t k = 0; k < CODE_SLOTS; k++, i = (i + 1) & (CODE_SLOTS - 1)) {
        if (w->codes[i].addr == code)
            return &w->codes[i];
        if (w->codes[i].addr == 0)
            break;
    }
    if (w->ncodes >= CODE_SLOTS / 2) { /* full enough: start over rather than degrade */
        for (size_t j = 0; j < CODE_SLOTS; j++) {
            free(w->codes[j].lines);
            memset(&w->codes[j], 0, sizeof w->codes[j]);
        }
        w->ncodes = 0;
        i = hash_ptr(code) & (CODE_SLOTS - 1);
    }
    const sop_pylayout *L = &w->L;
    uint8_t buf[512];
    if (L->co_read_size > sizeof buf) {
        *err = -EINVAL;
        return NULL;
    }
    int r = sop__rmem_read(&w->mem, code, buf, L->co_read_size);
    if (r < 0) {
        *err = r;
        return NULL;
    }
    if (w->code_type && rd64(buf, L->ob_type) != w->code_type) {
        *err = -EINVAL;
        return NULL;
    }
    code_entry e;
    memset(&e, 0, sizeof e);
    uint64_t name = rd64(buf, L->co_qualname ? L->co_qualname : L->co_name);
    uint64_t file = rd64(buf, L->co_filename);
    uint64_t lines = rd64(buf, L->co_lines);
    e.firstlineno = rd32(buf, L->co_firstlineno);
    if ((r = sop__rmem_unicode(&w->mem, &L->str, name, e.func, sizeof e.func)) < 0 ||
        (r = sop__rmem_unicode(&w->mem, &L->str, file, e.file, sizeof e.file)) < 0 ||
        (r = sop__rmem_bytes(&w->mem, &L->str, lines, MAX_LINETABLE_BYTES, &e.lines,
                             &e.nlines)) < 0) {
        *err = r == -E2BIG ? -EINVAL : r;
        return NULL;
    }
    while (w->codes[i].addr != 0)
        i = (i + 1) & (CODE_SLOTS - 1);
    e.addr = code;
    w->codes[i] = e;
    w->ncodes++;
    return &w->codes[i];
}

/* ---- frames ------------------------------------------------------------------------- */

static int push_frame(sop_pythread *t, size_t *cap, const code_entry *c, int line, bool entry)
{
    if (t->nframes == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        sop_pyframe *nf = realloc(t->frames, ncap * sizeof *nf);
        if (!nf)
            return -ENOMEM;
        t->frames = nf;
        *cap = ncap;
    }
    sop_pyframe *f = &t->frames[t->nframes++];
    snprintf(f->func, sizeof f->func, "%s", c->func);
    snprintf(f->file, sizeof f->file, "%s", c->file);
    f->line = line;
    f->entry = entry;
    return 0;
}

/* Walk the frames of the thread state at `tstate` into t. Returns 0, -EAGAIN for a torn read
 * (reason in why), -ESRCH when the process is gone, -ENOMEM. */
static int walk_thread(walker *w, uint64_t tstate, sop_pythread *t, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    uint8_t ts[4096];
    size_t cap = 0;
    free(t->frames);
    t->frames = NULL;
    t->nframes = 0;
    t->truncated = false;
    size_t tsz = L->ts_size < sizeof ts ? L->ts_size : sizeof ts;
    int r = sop__rmem_read(&w->mem, tstate, ts, tsz);
    if (r < 0) {
        snprintf(why, whylen, "thread state unreadable (%s)", sop__strerror(-r));
        return r == -ESRCH ? r : -EAGAIN;
    }
    t->thread_id = rd64(ts, L->ts_thread_id);
    if (L->ts_native_thread_id)
        t->tid = (int)rd64(ts, L->ts_native_thread_id);
    uint64_t f = rd64(ts, L->ts_frame);
    if (L->frames == SOP_PYFRAME_CFRAME && f) {
        uint64_t cf = f;
        if ((r = sop__rmem_u64(&w->mem, cf + L->cf_current_frame, &f)) < 0) {
            snprintf(why, whylen, "cframe unreadable (%s)", sop__strerror(-r));
            return r == -ESRCH ? r : -EAGAIN;
        }
    }
    memset(w->frame_set, 0, FRAME_SET_SLOTS * sizeof *w->frame_set);
    for (size_t depth = 0; f; depth++) {
        if (t->nframes >= MAX_FRAMES || depth >= 4 * MAX_FRAMES) {
            t->truncated = true;
            break;
        }
        if (!set_add(w->frame_set, FRAME_SET_SLOTS, f)) {
            snprintf(why, whylen, "frame chain loops at depth %zu", depth);
            return -EAGAIN;
        }
        uint8_t fb[128];
        uint64_t code, prev;
        int64_t addr_bytes;
        bool entry = true, skip = false;
        if (L->frames == SOP_PYFRAME_OBJECT) {
            if ((r = sop__rmem_read(&w->mem, f, fb, L->fo_lasti + 4)) < 0)
                goto unreadable;
            code = rd64(fb, L->fo_code);
            prev = rd64(fb, L->fo_back);
            int lasti = rd32(fb, L->fo_lasti);
            addr_bytes = L->lines == SOP_PYLINES_310 ? (int64_t)lasti * 2 : lasti;
        } else {
            if ((r = sop__rmem_read(&w->mem, f, fb, L->if_owner + 1)) < 0)
                goto unreadable;
            code = rd64(fb, L->if_code);
            prev = rd64(fb, L->if_previous);
            uint64_t instr = rd64(fb, L->if_instr);
            int owner = fb[L->if_owner];
            addr_bytes = (int64_t)(instr - (code + L->co_code_adaptive));
            if (L->if_is_entry >= 0)
                entry = fb[L->if_is_entry] != 0;
            else
                entry = false; /* decided when the older frame is seen */
            if (L->owner_cstack >= 0 && owner == L->owner_cstack) {
                skip = true; /* shim frame of a C call into the evaluator */
                if (t->nframes)
                    t->frames[t->nframes - 1].entry = true;
            }
        }
        if (!skip) {
            int err = 0;
            const code_entry *c = resolve_code(w, code, &err);
            if (!c) {
                if (err == -ESRCH)
                    return err;
                if (L->minor >= 13 && err == -EINVAL) {
                    /* 3.13: f_executable may be something other than a code object */
                    f = prev;
                    continue;
                }
                snprintf(why, whylen, "code object at depth %zu unreadable (%s)", depth,
                         err == -EINVAL ? "not a code object" : sop__strerror(-err));
                return -EAGAIN;
            }
            int line = -1;
            if (addr_bytes >= -2 && addr_bytes < INT_MAX)
                line = sop__py_addr2line(L->lines, c->lines, c->nlines, c->firstlineno,
                                         (int)addr_bytes);
            if (push_frame(t, &cap, c, line, entry) < 0)
                return -ENOMEM;
        }
        f = prev;
        continue;
    unreadable:
        if (r == -ESRCH)
            return r;
        snprintf(why, whylen, "frame at depth %zu unreadable (%s)", depth, sop__strerror(-r));
        return -EAGAIN;
    }
    if (t->nframes && !t->truncated)
        t->frames[t->nframes - 1].entry = true;
    return 0;
}

/* ---- finding the runtime ------------------------------------------------------------ */

static int version_from_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *p = strstr(b, "python3.");
    if (!p)
        return -1;
    p += 8;
    int minor = 0, nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 3)
        minor = minor * 10 + (*p++ - '0'), nd++;
    return nd ? minor : -1;
}

typedef struct {
    sop_elf elf;
    uint64_t bias;
    char path[512];     /* as the target sees it */
    char host_path[800]; /* through proc_root/PID/root */
} image;

static int open_image(walker *w, const char *suffix, image *im)
{
    uint64_t start;
    memset(im, 0, sizeof *im);
    if (sop__maps_find(w->maps, suffix, im->path, sizeof im->path, &start) < 0)
        return -ENOENT;
    snprintf(im->host_path, sizeof im->host_path, "%s/%d/root%s", w->proc_root, w->pid,
             im->path);
    int r = sop__elf_open(im->host_path, &im->elf);
    if (r < 0)
        return r;
    im->bias = sop__elf_bias(&im->elf, start);
    return 0;
}

/* Locate _PyRuntime and the version; choose the layout. */
static int find_runtime(walker *w, sop_python *py)
{
    image lib, exe;
    image *img = NULL;
    char exe_path[512];
    char link[300];
    snprintf(link, sizeof link, "%s/%d/exe", w->proc_root, w->pid);
    ssize_t n = readlink(link, exe_path, sizeof exe_path - 1);
    if (n < 0) {
        int e = errno;
        return e == ENOENT ? -ESRCH : -e;
    }
    exe_path[n] = '\0';
    char *del = strstr(exe_path, " (deleted)");
    if (del)
        *del = '\0';
    snprintf(py->executable, sizeof py->executable, "%s", exe_path);

    uint64_t sym = 0, symsize = 0;
    bool have_lib = open_image(w, NULL, &lib) == 0;
    bool have_exe = open_image(w, exe_path, &exe) == 0;
    /* A static build has _PyRuntime in the executable; a shared one in libpython. */
    if (have_exe && (sop__elf_symbol(&exe.elf, "_PyRuntime", &sym, &symsize) == 0 ||
                     sop__elf_section(&exe.elf, ".PyRuntime", &sym, &symsize, NULL) == 0))
        img = &exe;
    else if (have_lib && (sop__elf_symbol(&lib.elf, "_PyRuntime", &sym, &symsize) == 0 ||
                          sop__elf_section(&lib.elf, ".PyRuntime", &sym, &symsize, NULL) == 0))
        img = &lib;
    int rc = 0;
    if (!img) {
        rc = -ENOEXEC;
        goto out;
    }
    if (img == &lib)
        snprintf(py->libpython, sizeof py->libpython, "%s", lib.path);
    w->runtime = sym + img->bias;

    uint64_t v;
    if (sop__elf_symbol(&img->elf, "PyCode_Type", &v, NULL) == 0)
        w->code_type = v + img->bias;

    /* Version: Py_Version (3.11+) from the target's memory, else the PY_VERSION literal. */
    uint64_t hex = 0;
    int minor = -1;
    if (sop__elf_symbol(&img->elf, "Py_Version", &v, NULL) == 0) {
        uint32_t pv;
        if (sop__rmem_read(&w->mem, v + img->bias, &pv, sizeof pv) == 0 && (pv >> 24) == 3) {
            hex = pv;
            minor = (pv >> 16) & 0xff;
            static const char *lv[] = {"a", "b", "c", "rc"};
            unsigned level = (pv >> 4) & 0xf, serial = pv & 0xf;
            char tail[8] = "";
            if (level >= 0xa && level <= 0xc)
                snprintf(tail, sizeof tail, "%s%u", lv[level == 0xc ? 3 : level - 0xa], serial);
            snprintf(py->version, sizeof py->version, "3.%d.%u%s", minor, (pv >> 8) & 0xff,
                     tail);
        }
    }
    if (minor < 0) {
        minor = version_from_name(img->path);
        if (minor < 0)
            minor = version_from_name(exe_path);
        if (sop__elf_find_version(&img->elf, minor, py->version, sizeof py->version) == 0)
            minor = atoi(py->version + 2);
        else if (minor >= 0)
            snprintf(py->version, sizeof py->version, "3.%d", minor);
    }
    if (minor < 8) {
        sop__missing_add(w->missing, "python", "CPython %s is not supported (3.8-3.13 are)",
                         py->version[0] ? py->version : "version unknown");
        rc = minor < 0 ? -ENOEXEC : -ENOTSUP;
        goto out;
    }
    if (minor >= 13) {
        uint8_t blob[SOP_DEBUG_OFFSETS_313_SIZE];
        char why[160] = "";
        int r = sop__rmem_read(&w->mem, w->runtime, blob, sizeof blob);
        if (r == 0 && sop__pylayout_from_debug_offsets(blob, sizeof blob, hex, &w->L, why,
                                                       sizeof why) == 0)
            goto chosen;
        if (r < 0)
            snprintf(why, sizeof why, "debug offsets unreadable (%s)", sop__strerror(-r));
        if (minor == 13) {
            sop__missing_add(w->missing, "python", "%s; using the built-in 3.13 table", why);
        } else {
            sop__missing_add(w->missing, "python", "CPython %s: %s", py->version, why);
            rc = -ENOTSUP;
            goto out;
        }
    }
    const sop_pylayout *t = sop__pylayout_table(minor);
    if (!t) {
        sop__missing_add(w->missing, "python", "CPython %s is not supported", py->version);
        rc = -ENOTSUP;
        goto out;
    }
    w->L = *t;
chosen:
    snprintf(py->layout, sizeof py->layout, "%s", w->L.source);
out:
    if (have_lib)
        sop__elf_close(&lib.elf);
    if (have_exe)
        sop__elf_close(&exe.elf);
    return rc;
}

/* ---- GIL and GC ---------------------------------------------------------------------- */

/* The thread state holding the GIL of `interp` (0 when released). */
static uint64_t gil_holder(walker *w, uint64_t interp)
{
    const sop_pylayout *L = &w->L;
    uint64_t base, locked_at, holder_at;
    if (L->is_ceval_gil_ptr) {
        if (sop__rmem_read_direct(&w->mem, interp + L->is_ceval_gil_ptr, &base, 8) < 0 || !base)
            return 0;
        locked_at = base + L->gil_locked;
        holder_at = base + L->gil_last_holder;
    } else {
        locked_at = w->runtime + L->rt_gil_locked;
        holder_at = w->runtime + L->rt_gil_last_holder;
    }
    int32_t locked;
    uint64_t holder;
    if (sop__rmem_read_direct(&w->mem, locked_at, &locked, sizeof locked) < 0 || locked != 1)
        return 0;
    if (sop__rmem_read_direct(&w->mem, holder_at, &holder, sizeof holder) < 0)
        return 0;
    return holder;
}

static void read_gc(walker *w, uint64_t interp, sop_python *py)
{
    const sop_pylayout *L = &w->L;
    uint64_t gc = L->rt_gc ? w->runtime + L->rt_gc : interp + L->is_gc;
    uint8_t b[256];
    if (L->gc_permanent + 16 > sizeof b || sop__rmem_read_direct(&w->mem, gc, b, 224) < 0) {
        sop__missing_add(w->missing, "python", "GC state unreadable");
        return;
    }
    int32_t en = rd32(b, L->gc_enabled), co = rd32(b, L->gc_collecting);
    if ((en != 0 && en != 1) || (co != 0 && co != 1)) {
        sop__missing_add(w->missing, "python", "GC state implausible (enabled=%d)", en);
        return;
    }
    py->gc_enabled = en;
    py->gc_collecting = co;
    for (int g = 0; g < 3; g++) {
        uint32_t go = L->gc_generations + (uint32_t)g * L->gc_gen_size;
        py->gc_threshold[g] = rd32(b, go + L->gc_gen_threshold);
        py->gc_count[g] = rd32(b, go + L->gc_gen_count);
    }
    /* Frozen objects: the permanent generation's list (gc.freeze() does not keep a count);
     * walked up to 100000 nodes, else left unknown. */
    uint64_t head = gc + L->gc_permanent, node = rd64(b, L->gc_permanent);
    int64_t count = 0;
    for (; node != head && count <= 100000; count++) {
        if (!node || sop__rmem_u64(&w->mem, node, &node) < 0) {
            count = -1;
            break;
        }
        node &= ~(uint64_t)3; /* _gc_next carries no flag bits, but be safe */
    }
    if (count < 0 || count > 100000)
        sop__missing_add(w->missing, "python", "frozen GC objects not counted (%s)",
                         count < 0 ? "list unreadable" : "more than 100000");
    else
        py->gc_frozen = count;
}

/* ---- the collection ------------------------------------------------------------------ */

typedef struct {
    walker *w;
    uint64_t tstate;
    sop_pythread *t;
    int rc;
    char why[160];
} thread_job;

static void walk_with_retry(void *ctx, int tid)
{
    thread_job *j = ctx;
    (void)tid;
    j->rc = walk_thread(j->w, j->tstate, j->t, j->why, sizeof j->why);
    if (j->rc == -EAGAIN) { /* torn read: the target moved under us; once more, uncached */
        sop__rmem_flush(&j->w->mem);
        j->rc = walk_thread(j->w, j->tstate, j->t, j->why, sizeof j->why);
    }
}

void sop__python_free(sop_python *py)
{
    if (!py)
        return;
    for (size_t i = 0; i < py->nthreads; i++) {
        free(py->threads[i].frames);
        free(py->threads[i].native);
    }
    free(py->threads);
    free(py);
}

static int collect(walker *w, unsigned flags, sop_python *py)
{
    const sop_pylayout *L = &w->L;
    int rc = find_runtime(w, py);
    if (rc < 0)
        return rc;
    uint64_t interp;
    rc = sop__rmem_u64(&w->mem, w->runtime + L->rt_interp_head, &interp);
    if (rc < 0)
        return rc == -EFAULT ? -ENOEXEC : rc;
    if (!interp) {
        sop__missing_add(w->missing, "python", "no interpreter (not initialized or finalizing)");
        return 0;
    }
    uint64_t *tset = calloc(THREAD_SET_SLOTS, sizeof *tset);
    uint64_t *tstates = calloc(MAX_THREADS, sizeof *tstates);
    if (!tset || !tstates) {
        free(tset);
        free(tstates);
        return -ENOMEM;
    }
    uint64_t holders[MAX_INTERPS];
    size_t nholders = 0, nts = 0;
    uint64_t last_interp = 0;
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        holders[nholders++] = gil_holder(w, interp);
        last_interp = interp;
        uint64_t ts = 0;
        if ((rc = sop__rmem_u64(&w->mem, interp + L->is_tstate_head, &ts)) < 0)
            break;
        while (ts && nts < MAX_THREADS) {
            if (!set_add(tset, THREAD_SET_SLOTS, ts)) {
                sop__missing_add(w->missing, "python", "thread list loops (torn read)");
                break;
            }
            tstates[nts++] = ts;
            if ((rc = sop__rmem_u64(&w->mem, ts + L->ts_next, &ts)) < 0)
                break;
        }
        if (nts >= MAX_THREADS)
            sop__missing_add(w->missing, "python", "more than %d threads; rest skipped",
                             MAX_THREADS);
        if (rc == -ESRCH || sop__rmem_u64(&w->mem, interp + L->is_next, &interp) < 0)
            break;
    }
    if (rc == -ESRCH) {
        free(tset);
        free(tstates);
        return rc;
    }
    rc = 0;
    if (last_interp)
        read_gc(w, last_interp, py);
    py->threads = calloc(nts ? nts : 1, sizeof *py->threads);
    if (!py->threads) {
        free(tset);
        free(tstates);
        return -ENOMEM;
    }
    bool ptrace_refused = false;
    sop_native *nv = NULL;
    if ((flags & SOP_PY_NATIVE) && sop__native_open(w->pid, w->proc_root, w->maps, &nv) < 0)
        sop__missing_add(w->missing, "native", "out of memory");
    /* The list runs newest first; report oldest (the main thread) first. */
    for (size_t k = 0; k < nts; k++) {
        uint64_t tsa = tstates[nts - 1 - k];
        sop_pythread *t = &py->threads[py->nthreads];
        memset(t, 0, sizeof *t);
        thread_job j = {w, tsa, t, 0, ""};
        walk_with_retry(&j, 0);
        if (j.rc == -ESRCH) {
            rc = -ESRCH;
            break;
        }
        if (j.rc == -ENOMEM) {
            rc = -ENOMEM;
            break;
        }
        if (!t->tid && t->thread_id) {
            int32_t tid = 0;
            if (sop__rmem_read(&w->mem, t->thread_id + GLIBC_PTHREAD_TID_OFFSET, &tid,
                               sizeof tid) == 0 && tid > 0 && task_exists(w, tid))
                t->tid = tid;
        }
        /* Names: threading's names are not read (yet); the process's first thread is the
         * one CPython initialized in, which threading calls "MainThread". */
        if (t->tid == w->pid)
            snprintf(t->name, sizeof t->name, "MainThread");
        for (size_t h = 0; h < nholders; h++)
            if (holders[h] && holders[h] == tsa)
                t->gil = true;
        if (j.rc == -EAGAIN)
            sop__missing_add(w->missing, "python", "thread %d: %s (frames so far kept)",
                             t->tid, j.why);
        if (flags & SOP_PY_NATIVE) {
            if (!nv) {
                snprintf(t->native_error, sizeof t->native_error, "unwinder unavailable");
            } else if (ptrace_refused) {
                snprintf(t->native_error, sizeof t->native_error, "ptrace refused");
            } else if (t->tid > 0) {
                /* Stop this thread only, re-read its Python frames while it is still, unwind. */
                sop_nframe *nat = NULL;
                size_t nn = 0;
                char err[160] = "";
                int nr = sop__native_thread(nv, t->tid, walk_with_retry, &j, &nat, &nn,
                                            &t->pause_ms, err, sizeof err);
                if (nr == -EPERM || nr == -EACCES) {
                    ptrace_refused = true;
                    sop__missing_add(w->missing, "native", "ptrace refused: %s", err);
                    snprintf(t->native_error, sizeof t->native_error, "ptrace refused: %s", err);
                } else if (nr < 0) {
                    snprintf(t->native_error, sizeof t->native_error, "%s", err);
                    sop__missing_add(w->missing, "native", "thread %d: %s", t->tid, err);
                } else {
                    sop__native_merge(nat, nn, t->frames, t->nframes, &t->native, &t->nnative);
                }
                free(nat);
            } else {
                snprintf(t->native_error, sizeof t->native_error, "OS thread id unknown");
            }
        }
        py->nthreads++;
    }
    sop__native_close(nv);
    free(tset);
    free(tstates);
    if (rc < 0)
        return rc;
    /* Activity from the OS state; a thread holding the GIL counts as active. */
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_pythread *t = &py->threads[i];
        char st = t->tid > 0 ? task_state(w, t->tid) : '?';
        t->active = st == 'R' || t->gil;
        if (t->gil)
            py->gil_holder_tid = t->tid;
    }
    return 0;
}

int sop__python_collect(int pid, const char *proc_root, unsigned flags, sop_python **out,
                        sop_missing *missing)
{
    *out = NULL;
    walker w;
    memset(&w, 0, sizeof w);
    w.pid = pid;
    w.proc_root = proc_root ? proc_root : "/proc";
    w.missing = missing;
    char path[300];
    size_t len;
    snprintf(path, sizeof path, "%s/%d/maps", w.proc_root, pid);
    int rc = sop__read_file_at(AT_FDCWD, path, MAPS_MAX_BYTES, &w.maps, &len);
    if (rc < 0) {
        if (rc == -ENOENT)
            rc = -ESRCH;
        sop__missing_add(missing, "python", "%s: %s", path, sop__strerror(-rc));
        return rc;
    }
    sop_python *py = calloc(1, sizeof *py);
    w.codes = calloc(CODE_SLOTS, sizeof *w.codes);
    w.frame_set = calloc(FRAME_SET_SLOTS, sizeof *w.frame_set);
    if (!py || !w.codes || !w.frame_set || sop__rmem_open(&w.mem, pid, w.proc_root) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    py->gil_holder_tid = SOP_NA;
    py->gc_enabled = py->gc_collecting = py->gc_frozen = SOP_NA;
    for (int g = 0; g < 3; g++)
        py->gc_threshold[g] = py->gc_count[g] = SOP_NA;
    rc = collect(&w, flags, py);
    if (rc == -EFAULT || rc == -EAGAIN || rc == 0) {
        /* Reads that failed because the target exited count as "gone". */
        snprintf(path, sizeof path, "%s/%d", w.proc_root, pid);
        if (access(path, F_OK) < 0)
            rc = -ESRCH;
    }
    switch (rc) {
    case 0:
        break;
    case -ENOEXEC:
        sop__missing_add(missing, "python", "not a CPython process");
        break;
    case -ESRCH:
        sop__missing_add(missing, "python", "process %d exited during the read", pid);
        break;
    case -EPERM:
    case -EACCES:
        sop__missing_add(missing, "python", "memory of %d not readable: %s", pid, sop__strerror(-rc));
        break;
    case -ENOTSUP:
        break; /* reason already added */
    default:
        sop__missing_add(missing, "python", "read failed: %s", sop__strerror(-rc));
    }
out:
    free_codes(&w);
    free(w.frame_set);
    free(w.maps);
    sop__rmem_close(&w.mem);
    if (rc < 0) {
        sop__python_free(py);
        return rc;
    }
    *out = py;
    return 0;
}
