/* py_runtime.c — find the CPython runtime of a process from outside: the executable and
 * libpython from /proc/PID/maps, _PyRuntime / PyCode_Type / Py_Version from their ELF symbols
 * (elf.c), the version, and the layout (py_layouts.c, the only place for offsets). Found once
 * per collection; the walkers take the result. Depends on libc, elf.c, remote_mem.c. */
#include "py_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../procfs.h"
#include "elf.h"

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
    char path[512]; /* as /proc/PID/maps names it */
} image;

static int open_image(int pid, const char *proc_root, const char *maps, const char *suffix,
                      image *im)
{
    sop_mapping m;
    memset(im, 0, sizeof *im);
    if (sop__maps_find(maps, suffix, &m) < 0)
        return -ENOENT;
    snprintf(im->path, sizeof im->path, "%s", m.path);
    int r = sop__elf_open_mapped(proc_root, pid, &m, &im->elf);
    if (r < 0)
        return r;
    im->bias = sop__elf_bias(&im->elf, m.lo);
    return 0;
}

/* The process image's identity: start time and stack start from /proc/PID/stat (fields 22
 * and 28; the stack moves on every exec), the executable's device and inode. */
static void image_identity(int pid, const char *proc_root, uint64_t id[4])
{
    char path[300], buf[1024];
    memset(id, 0, 4 * sizeof *id);
    snprintf(path, sizeof path, "%s/%d/stat", proc_root, pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    if (p && p[1] == ' ' && p[2])
        p += 2; /* field 3, the state letter */
    else
        p = NULL;
    for (int field = 4; p && *p && field <= 28; field++) {
        while (*p && *p != ' ')
            p++;
        int64_t v = sop__parse_i64(&p);
        if (v == SOP_NA)
            break;
        if (field == 22)
            id[0] = (uint64_t)v;
        else if (field == 28)
            id[1] = (uint64_t)v;
    }
    struct stat st;
    snprintf(path, sizeof path, "%s/%d/exe", proc_root, sop__live_task(proc_root, pid));
    if (stat(path, &st) == 0) {
        id[2] = (uint64_t)st.st_dev;
        id[3] = (uint64_t)st.st_ino;
    }
}

/* Is there a GC list head at `head` (the words b, as read)? Either empty (both links to
 * itself) or its first node links back to it (_gc_prev carries flags in its low 2 bits). */
static bool gc_list_head(sop_rmem *mem, uint64_t head, const uint8_t *b)
{
    uint64_t next, prev, back;
    memcpy(&next, b, 8);
    memcpy(&prev, b + 8, 8);
    next &= ~(uint64_t)3;
    prev &= ~(uint64_t)3;
    if (next == head || prev == head)
        return next == head && prev == head;
    if (!next || (next & 7) || !prev || (prev & 7) || sop__rmem_u64(mem, next + 8, &back) < 0)
        return false;
    return (back & ~(uint64_t)3) == head;
}

/* The GC's generation list heads are not in the debug offsets, and a patch release may move
 * them (3.13.18: PyGC_Head aligned to 4, so generations start 4 bytes earlier than in 3.13.0).
 * Find them where the table says, or a word either side, by what they are: three list heads
 * in a row. Not found: the generations are left unread (gc_gen_size 0), never read wrong. */
static void verify_gc_generations(sop_rmem *mem, sop_pyruntime *rt, sop_missing *missing)
{
    sop_pylayout *L = &rt->L;
    uint64_t interp = 0, last = 0;
    if (sop__rmem_u64(mem, rt->runtime + L->rt_interp_head, &interp) < 0)
        return;
    for (int i = 0; interp && i < 64; i++) { /* the main interpreter is the last */
        last = interp;
        if (sop__rmem_u64(mem, interp + L->is_next, &interp) < 0)
            return;
    }
    if (!last)
        return; /* not initialized: nothing to check against */
    uint64_t gc = L->rt_gc ? rt->runtime + L->rt_gc : last + L->is_gc;
    uint8_t b[SOP_PYLAYOUT_GC_READ];
    if (sop__rmem_read(mem, gc, b, sizeof b) < 0)
        return;
    const int shifts[] = {0, -4, 4, -8, 8};
    for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; k++) {
        int64_t at = (int64_t)L->gc_generations + shifts[k];
        if (at < 0 || at + 3 * (int64_t)L->gc_gen_size > (int64_t)sizeof b)
            continue;
        bool ok = true;
        for (int g = 0; g < 3 && ok; g++) {
            uint32_t off = (uint32_t)at + (uint32_t)g * L->gc_gen_size;
            int32_t threshold;
            memcpy(&threshold, b + off + L->gc_gen_threshold, 4);
            ok = threshold >= 0 && gc_list_head(mem, gc + off, b + off);
        }
        if (ok) {
            L->gc_generations = (uint32_t)at;
            return;
        }
    }
    sop__missing_add(missing, "python",
                     "GC generations not found where the %s layout puts them (+%u): thresholds, "
                     "counts and the heap census's lists not read",
                     L->source, L->gc_generations);
    L->gc_gen_size = 0;
}

/* Locate _PyRuntime and the version; choose the layout. */
static int find(int pid, const char *proc_root, const char *maps, sop_rmem *mem, sop_pyruntime *rt,
                sop_missing *missing)
{
    image lib, exe;
    image *img = NULL;
    char exe_path[512];
    char link[300];
    snprintf(link, sizeof link, "%s/%d/exe", proc_root, sop__live_task(proc_root, pid));
    ssize_t n = readlink(link, exe_path, sizeof exe_path - 1);
    if (n < 0) {
        int e = errno;
        return e == ENOENT ? -ESRCH : -e;
    }
    exe_path[n] = '\0';
    char *del = strstr(exe_path, " (deleted)");
    if (del)
        *del = '\0';
    snprintf(rt->executable, sizeof rt->executable, "%s", exe_path);

    uint64_t sym = 0, symsize = 0;
    int lib_rc = open_image(pid, proc_root, maps, NULL, &lib);
    int exe_rc = open_image(pid, proc_root, maps, exe_path, &exe);
    bool have_lib = lib_rc == 0, have_exe = exe_rc == 0;
    if (!have_lib && !have_exe && (exe_rc == -EACCES || exe_rc == -EPERM)) {
        sop__missing_add(missing, "python", "%s/%d/root%s: %s", proc_root, pid, exe_path,
                         strerror(-exe_rc));
        return exe_rc;
    }
    /* A static build has _PyRuntime in the executable; a shared one in libpython. */
    if (have_exe && (sop__elf_symbol(&exe.elf, "_PyRuntime", &sym, &symsize) == 0 ||
                     sop__elf_section(&exe.elf, ".PyRuntime", &sym, &symsize, NULL) == 0))
        img = &exe;
    else if (have_lib && (sop__elf_symbol(&lib.elf, "_PyRuntime", &sym, &symsize) == 0 ||
                          sop__elf_section(&lib.elf, ".PyRuntime", &sym, &symsize, NULL) == 0))
        img = &lib;
    int rc = 0;
    if (!img) {
        /* An interpreter without _PyRuntime (CPython 3.6 and older) is CPython all the same:
         * say so rather than "not CPython". */
        uint64_t init;
        if ((have_exe && sop__elf_symbol(&exe.elf, "Py_Initialize", &init, NULL) == 0) ||
            (have_lib && sop__elf_symbol(&lib.elf, "Py_Initialize", &init, NULL) == 0)) {
            sop__missing_add(missing, "python",
                             "CPython without _PyRuntime (3.6 or older) is not supported "
                             "(3.8-3.%d are)",
                             SOP_PYLAYOUT_NEWEST_MINOR);
            rc = -ENOTSUP;
        } else {
            rc = -ENOEXEC;
        }
        goto out;
    }
    if (img == &lib)
        snprintf(rt->libpython, sizeof rt->libpython, "%s", lib.path);
    rt->runtime = sym + img->bias;

    uint64_t v;
    if (sop__elf_symbol(&img->elf, "PyCode_Type", &v, NULL) == 0)
        rt->code_type = v + img->bias;

    /* Version: Py_Version (3.11+) from the target's memory, else the PY_VERSION literal. */
    uint64_t hex = 0;
    int minor = -1;
    if (sop__elf_symbol(&img->elf, "Py_Version", &v, NULL) == 0) {
        uint32_t pv;
        if (sop__rmem_read(mem, v + img->bias, &pv, sizeof pv) == 0 && (pv >> 24) == 3) {
            hex = pv;
            minor = (pv >> 16) & 0xff;
            static const char *lv[] = {"a", "b", "c", "rc"};
            unsigned level = (pv >> 4) & 0xf, serial = pv & 0xf;
            char tail[8] = "";
            if (level >= 0xa && level <= 0xc)
                snprintf(tail, sizeof tail, "%s%u", lv[level == 0xc ? 3 : level - 0xa], serial);
            snprintf(rt->version, sizeof rt->version, "3.%d.%u%s", minor, (pv >> 8) & 0xff, tail);
        }
    }
    if (minor < 0) {
        minor = version_from_name(img->path);
        if (minor < 0)
            minor = version_from_name(exe_path);
        if (sop__elf_find_version(&img->elf, minor, rt->version, sizeof rt->version) == 0)
            minor = atoi(rt->version + 2);
        else if (minor >= 0)
            snprintf(rt->version, sizeof rt->version, "3.%d", minor);
    }
    if (minor < 8) {
        sop__missing_add(missing, "python", "CPython %s is not supported (3.8-3.%d are)",
                         rt->version[0] ? rt->version : "version unknown",
                         SOP_PYLAYOUT_NEWEST_MINOR);
        rc = minor < 0 ? -ENOEXEC : -ENOTSUP;
        goto out;
    }
    if (minor >= 13) {
        uint8_t blob[SOP_DEBUG_OFFSETS_MAX_SIZE];
        char why[200] = "";
        int r = sop__rmem_read(mem, rt->runtime, blob, sizeof blob);
        if (r == 0) {
            r = sop__pylayout_from_debug_offsets(blob, sizeof blob, hex, &rt->L, why, sizeof why);
            if (r == 0)
                goto chosen;
            if (r == -ENOTSUP) { /* a newer version, or a free-threaded build */
                sop__missing_add(missing, "python", "%s; Python evidence unavailable", why);
                rc = -ENOTSUP;
                goto out;
            }
        } else {
            snprintf(why, sizeof why, "debug offsets unreadable (%s)", sop__strerror(-r));
        }
        if (minor == 13) {
            sop__missing_add(missing, "python", "%s; using the built-in 3.13 table", why);
        } else if (minor > SOP_PYLAYOUT_NEWEST_MINOR) {
            sop__missing_add(missing, "python",
                             "CPython %s: layout not known to this sop (it reads 3.8-3.%d); "
                             "Python evidence unavailable",
                             rt->version, SOP_PYLAYOUT_NEWEST_MINOR);
            rc = -ENOTSUP;
            goto out;
        } else {
            sop__missing_add(missing, "python", "CPython %s: %s; Python evidence unavailable",
                             rt->version, why);
            rc = -ENOTSUP;
            goto out;
        }
    }
    const sop_pylayout *t = sop__pylayout_table(minor);
    if (!t) {
        sop__missing_add(missing, "python", "CPython %s is not supported (3.8-3.%d are)",
                         rt->version, SOP_PYLAYOUT_NEWEST_MINOR);
        rc = -ENOTSUP;
        goto out;
    }
    rt->L = *t;
chosen:
    snprintf(rt->layout, sizeof rt->layout, "%s", rt->L.source);
    verify_gc_generations(mem, rt, missing);
out:
    if (have_lib)
        sop__elf_close(&lib.elf);
    if (have_exe)
        sop__elf_close(&exe.elf);
    return rc;
}

int sop__pyruntime_find_in(int pid, const char *proc_root, const char *maps, sop_rmem *mem,
                           sop_pyruntime *rt, sop_missing *missing)
{
    memset(rt, 0, sizeof *rt);
    rt->pid = pid;
    snprintf(rt->proc_root, sizeof rt->proc_root, "%s", proc_root);
    uint64_t id[4];
    image_identity(pid, proc_root, id);
    rt->start_ticks = id[0];
    rt->start_stack = id[1];
    rt->exe_dev = id[2];
    rt->exe_ino = id[3];
    sop_missing notes = {0};
    rt->rc = find(pid, proc_root, maps, mem, rt, &notes);
    for (size_t i = 0; i < notes.n; i++) {
        if (rt->nnotes < SOP_PYRUNTIME_NOTES)
            rt->notes[rt->nnotes++] = notes.items[i];
        sop__missing_add(missing, notes.items[i].probe, "%s", notes.items[i].reason);
    }
    sop__missing_free(&notes);
    return rt->rc;
}

int sop__pyruntime_find_maps(int pid, const char *proc_root, const char *maps, sop_pyruntime *rt,
                             sop_missing *missing)
{
    proc_root = proc_root ? proc_root : "/proc";
    char *own = NULL;
    if (!maps || !*maps) {
        memset(rt, 0, sizeof *rt);
        char path[300];
        size_t len;
        snprintf(path, sizeof path, "%s/%d/maps", proc_root, sop__live_task(proc_root, pid));
        int rc = sop__read_file_at(AT_FDCWD, path, SOP_MAPS_MAX_BYTES, &own, &len);
        if (rc < 0) {
            rt->rc = rc == -ENOENT ? -ESRCH : rc;
            return rt->rc;
        }
        maps = own;
    }
    sop_rmem mem;
    if (sop__rmem_open(&mem, pid, proc_root) < 0) {
        free(own);
        memset(rt, 0, sizeof *rt);
        rt->rc = -ENOMEM;
        return rt->rc;
    }
    int rc = sop__pyruntime_find_in(pid, proc_root, maps, &mem, rt, missing);
    sop__rmem_close(&mem);
    free(own);
    return rc;
}

int sop__pyruntime_find(int pid, const char *proc_root, sop_pyruntime *rt, sop_missing *missing)
{
    return sop__pyruntime_find_maps(pid, proc_root, NULL, rt, missing);
}

bool sop__pyruntime_current(const sop_pyruntime *rt, int pid, const char *proc_root)
{
    proc_root = proc_root ? proc_root : "/proc";
    if (!rt || rt->pid != pid || strcmp(rt->proc_root, proc_root) != 0)
        return false;
    uint64_t id[4];
    image_identity(pid, proc_root, id);
    return id[0] != 0 && id[0] == rt->start_ticks && id[1] == rt->start_stack &&
           id[2] == rt->exe_dev && id[3] == rt->exe_ino;
}

void sop__pyruntime_replay(const sop_pyruntime *rt, sop_missing *missing)
{
    for (int i = 0; i < rt->nnotes; i++)
        sop__missing_add(missing, rt->notes[i].probe, "%s", rt->notes[i].reason);
}

const sop_pyruntime *sop__pyruntime_reuse(const sop_pyruntime *rt, int pid, const char *proc_root,
                                          sop_pyruntime *fresh, sop_missing *missing)
{
    if (rt && sop__pyruntime_current(rt, pid, proc_root)) {
        sop__pyruntime_replay(rt, missing);
        return rt;
    }
    sop__pyruntime_find(pid, proc_root, fresh, missing);
    return fresh;
}
