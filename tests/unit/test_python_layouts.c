/* test_python_layouts.c — the CPython probe's parts on real inputs: the ELF reader on real
 * python / libpython files, line tables decoded from bytes the real interpreters produced
 * (tests/fixtures/python/linetable_3X.txt, see gen_linetable.py), _Py_DebugOffsets validation
 * (the blob of the real libpython3.13, then corrupted copies), remote reads of this process's
 * own memory, and — when /usr/bin/python3.11 exists — the GC state of a child interpreter. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "na.h"
#include "python/cpython.h"
#include "python/elf.h"
#include "python/linetable.h"
#include "python/py_layouts.h"
#include "python/remote_mem.h"
#include "t.h"

#define PY313_LIB "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0"
#define PY38_LIB "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0"
#define DEB_PY311 "/usr/bin/python3.11"

static void test_elf_real(void)
{
    sop_elf e;
    if (access(DEB_PY311, R_OK) == 0) {
        CHECK_EQ_I(sop__elf_open(DEB_PY311, &e), 0);
        uint64_t sym = 0, sec = 0, size = 0, v = 0;
        CHECK_EQ_I(sop__elf_symbol(&e, "_PyRuntime", &sym, &size), 0);
        CHECK_EQ_I(sop__elf_section(&e, ".PyRuntime", &sec, NULL, NULL), 0);
        CHECK(sym != 0 && sym == sec); /* _PyRuntime lives at the start of .PyRuntime */
        CHECK(size > 1000);
        CHECK_EQ_I(sop__elf_symbol(&e, "Py_Version", &v, NULL), 0);
        CHECK_EQ_I(sop__elf_symbol(&e, "no_such_symbol_xyz", &v, NULL), -ENOENT);
        sop_elf_sym *syms = NULL;
        size_t n = 0;
        CHECK_EQ_I(sop__elf_func_symbols(&e, &syms, &n), 0);
        uint64_t eval = 0, evsize = 0;
        CHECK_EQ_I(sop__elf_symbol(&e, "_PyEval_EvalFrameDefault", &eval, &evsize), 0);
        const sop_elf_sym *s = sop__elf_sym_at(syms, n, eval + evsize / 2);
        CHECK(s && strcmp(s->name, "_PyEval_EvalFrameDefault") == 0);
        CHECK(sop__elf_sym_at(syms, n, 1) == NULL);
        free(syms);
        sop__elf_close(&e);
    } else {
        printf("note: %s absent; its checks skipped\n", DEB_PY311);
    }
    if (access(PY38_LIB, R_OK) == 0) {
        CHECK_EQ_I(sop__elf_open(PY38_LIB, &e), 0);
        char ver[32] = "";
        CHECK_EQ_I(sop__elf_find_version(&e, 8, ver, sizeof ver), 0);
        CHECK_EQ_S(ver, "3.8.18");
        uint64_t sym;
        CHECK_EQ_I(sop__elf_symbol(&e, "_PyRuntime", &sym, NULL), 0);
        CHECK_EQ_I(sop__elf_find_version(&e, 12, ver, sizeof ver), -ENOENT);
        sop__elf_close(&e);
    } else {
        printf("note: %s absent; its checks skipped\n", PY38_LIB);
    }
    /* Not an ELF / truncated / corrupt section table. */
    CHECK_EQ_I(sop__elf_open("/proc/self/status", &e), -ENOEXEC);
    static uint8_t junk[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    CHECK_EQ_I(sop__elf_from_buffer(junk, sizeof junk, &e), -ENOEXEC);
    size_t len = 0;
    if (access(DEB_PY311, R_OK) == 0) {
        FILE *f = fopen(DEB_PY311, "rb");
        uint8_t *head = malloc(4096);
        len = f ? fread(head, 1, 4096, f) : 0;
        if (f)
            fclose(f);
        /* the header points at section headers far past these 4096 bytes */
        CHECK_EQ_I(sop__elf_from_buffer(head, len, &e), -ENOEXEC);
        free(head);
    }
}

static void test_maps(void)
{
    const char *maps =
        "00400000-00420000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
        "00420000-00800000 r-xp 00020000 08:01 123 /usr/bin/python3.11\n"
        "7f0000000000-7f0000100000 r--p 00100000 08:01 77 /opt/lib/libpython3.12.so.1.0\n"
        "7f0000200000-7f0000300000 r--p 00000000 08:01 77 /opt/lib/libpython3.12.so.1.0\n"
        "7fff00000000-7fff00021000 rw-p 00000000 00:00 0 [stack]\n"
        "garbage line\n";
    sop_mapping m;
    CHECK_EQ_I(sop__maps_find(maps, NULL, &m), 0);
    CHECK_EQ_S(m.path, "/opt/lib/libpython3.12.so.1.0");
    CHECK_EQ_I(m.lo, 0x7f0000200000ull); /* the offset-0 mapping, not the first one */
    CHECK_EQ_I(m.hi, 0x7f0000300000ull);
    CHECK_EQ_I(m.dev_major, 8);
    CHECK_EQ_I(m.dev_minor, 1);
    CHECK_EQ_I(m.ino, 77);
    CHECK_EQ_I(sop__maps_find(maps, "/usr/bin/python3.11", &m), 0);
    CHECK_EQ_I(m.lo, 0x400000);
    CHECK_EQ_I(sop__maps_find(maps, "/bin/sleep", &m), -ENOENT);
    CHECK_EQ_I(sop__maps_find("", NULL, &m), -ENOENT);
    CHECK_EQ_I(sop__maps_find("7f-80 r--p 0", NULL, &m), -ENOENT);
    /* a deleted file keeps its mark in the path (map_files opens it all the same) */
    CHECK_EQ_I(sop__maps_find("7f0000200000-7f0000300000 r--p 00000000 fe:00 1060561 "
                              "/srv/root/usr/lib/libpython3.14.so.1.0 (deleted)\n",
                              NULL, &m),
               0);
    CHECK_EQ_S(m.path, "/srv/root/usr/lib/libpython3.14.so.1.0 (deleted)");
    CHECK_EQ_I(m.dev_major, 0xfe);
    CHECK_EQ_I(m.ino, 1060561);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void test_linetable_file(const char *name)
{
    char *text = t_slurp(name, NULL);
    char kind[32];
    int first = 0;
    char *p = text;
    CHECK(sscanf(p, "kind %31s\nfirstlineno %d", kind, &first) == 2);
    sop_pylines_kind k = strcmp(kind, "lnotab") == 0 ? SOP_PYLINES_LNOTAB
                         : strcmp(kind, "310") == 0  ? SOP_PYLINES_310
                                                     : SOP_PYLINES_LOCATIONS;
    char *tab = strstr(p, "table ");
    CHECK(tab != NULL);
    if (!tab) {
        free(text);
        return;
    }
    tab += 6;
    uint8_t bytes[8192];
    size_t n = 0;
    while (hexval(tab[0]) >= 0 && hexval(tab[1]) >= 0 && n < sizeof bytes) {
        bytes[n++] = (uint8_t)(hexval(tab[0]) * 16 + hexval(tab[1]));
        tab += 2;
    }
    int rows = 0, bad = 0;
    for (char *line = strchr(tab, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        int off, want;
        if (sscanf(line + 1, "%d %d", &off, &want) != 2)
            continue;
        int got = sop__py_addr2line(k, bytes, n, first, off);
        rows++;
        if (got != want) {
            if (bad++ < 3)
                fprintf(stderr, "%s: offset %d: line %d, expected %d\n", name, off, got, want);
        }
    }
    CHECK(rows > 30);
    CHECK_EQ_I(bad, 0);
    /* Before the first instruction: the first line. Truncated tables never read past n. */
    CHECK_EQ_I(sop__py_addr2line(k, bytes, n, first, -2), first);
    for (size_t cut = 0; cut < n; cut += 7)
        (void)sop__py_addr2line(k, bytes, cut, first, 1000);
    free(text);
}

static void test_linetables(void)
{
    const char *files[] = {"python/linetable_38.txt",  "python/linetable_39.txt",
                           "python/linetable_310.txt", "python/linetable_311.txt",
                           "python/linetable_312.txt", "python/linetable_313.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        test_linetable_file(files[i]);
    /* Hand-made 3.11 entries: one-line form code 11 (+1), long form 14 with delta -3,
     * then "no location" 15. */
    const uint8_t loc[] = {0x80 | (11 << 3) | 1, 0, 0,       /* 2 units, line+1 */
                           0x80 | (14 << 3) | 0, 7, 0, 0, 0, /* 1 unit, svarint 7 = -3 */
                           0x80 | (15 << 3) | 0};
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, loc, sizeof loc, 10, 0), 11);
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, loc, sizeof loc, 10, 2), 11);
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, loc, sizeof loc, 10, 4), 8);
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, loc, sizeof loc, 10, 6), -1);
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, loc, sizeof loc, 10, 8), -1);
    /* A continuation byte where an entry should start: malformed, no line. */
    const uint8_t badloc[] = {0x05};
    CHECK_EQ_I(sop__py_addr2line(SOP_PYLINES_LOCATIONS, badloc, 1, 10, 0), -1);
}

static void test_debug_offsets(void)
{
    sop_elf e;
    if (access(PY313_LIB, R_OK) != 0 || sop__elf_open(PY313_LIB, &e) != 0) {
        printf("note: %s absent; debug offsets checks skipped\n", PY313_LIB);
        return;
    }
    uint64_t addr, size, off;
    CHECK_EQ_I(sop__elf_section(&e, ".PyRuntime", &addr, &size, &off), 0);
    uint8_t blob[SOP_DEBUG_OFFSETS_MAX_SIZE];
    CHECK_EQ_I(sop__pylayout_debug_offsets_size(13), 584);
    CHECK(off + sizeof blob <= e.size);
    memcpy(blob, e.base + off, sizeof blob);
    uint64_t pv = 0, pvsym;
    CHECK_EQ_I(sop__elf_symbol(&e, "Py_Version", &pvsym, NULL), 0);
    sop__elf_close(&e);
    memcpy(&pv, blob + 8, sizeof pv);
    CHECK_EQ_I(pv, 0x030d00f0); /* 3.13.0 final */

    sop_pylayout L;
    char why[160] = "";
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(blob, sizeof blob, pv, &L, why, sizeof why), 0);
    const sop_pylayout *T = sop__pylayout_table(13);
    /* The interpreter's own offsets agree with the table compiled from its headers. */
    CHECK_EQ_I(L.rt_interp_head, T->rt_interp_head);
    CHECK_EQ_I(L.is_tstate_head, T->is_tstate_head);
    CHECK_EQ_I(L.is_next, T->is_next);
    CHECK_EQ_I(L.is_id, T->is_id);
    CHECK_EQ_I(L.rt_finalizing, T->rt_finalizing);
    CHECK_EQ_I(L.is_gc, T->is_gc);
    CHECK_EQ_I(L.ts_frame, T->ts_frame);
    CHECK_EQ_I(L.ts_native_thread_id, T->ts_native_thread_id);
    CHECK_EQ_I(L.if_instr, T->if_instr);
    CHECK_EQ_I(L.if_owner, T->if_owner);
    CHECK_EQ_I(L.co_code_adaptive, T->co_code_adaptive);
    CHECK_EQ_I(L.co_qualname, T->co_qualname);
    CHECK_EQ_I(L.gil_locked, T->gil_locked);
    CHECK_EQ_I(L.gil_last_holder, T->gil_last_holder);
    CHECK_EQ_I(L.str.uni_ascii_size, T->str.uni_ascii_size);
    CHECK_EQ_I(L.str.uni_compact_size, T->str.uni_compact_size);
    CHECK_EQ_S(L.source, "_Py_DebugOffsets");

    uint8_t bad[sizeof blob];
    memcpy(bad, blob, sizeof bad);
    bad[0] = 'X'; /* cookie */
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(bad, sizeof bad, 0, &L, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "cookie") != NULL);
    memcpy(bad, blob, sizeof bad);
    uint64_t v = 0x030c01f0; /* claims 3.12 */
    memcpy(bad + 8, &v, 8);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(bad, sizeof bad, 0, &L, why, sizeof why), -EINVAL);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(blob, sizeof blob, 0x030d01f0, &L, why, sizeof why),
               -EINVAL); /* disagrees with Py_Version */
    memcpy(bad, blob, sizeof bad);
    v = 1u << 30; /* thread state size absurd */
    memcpy(bad + 19 * 8, &v, 8);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(bad, sizeof bad, 0, &L, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "size") != NULL);
    memcpy(bad, blob, sizeof bad);
    uint64_t tsize;
    memcpy(&tsize, blob + 19 * 8, 8);
    v = tsize + 8; /* current_frame beyond the thread state */
    memcpy(bad + (19 + 4) * 8, &v, 8);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(bad, sizeof bad, 0, &L, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "outside") != NULL);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(blob, 100, 0, &L, why, sizeof why), -EINVAL);
    /* A thread state claimed larger than the reader's buffer, with the frame pointer beyond
     * it: consistent in itself, but refused. */
    memcpy(bad, blob, sizeof bad);
    v = 8000;
    memcpy(bad + 19 * 8, &v, 8);
    v = 7000;
    memcpy(bad + (19 + 4) * 8, &v, 8);
    CHECK_EQ_I(sop__pylayout_from_debug_offsets(bad, sizeof bad, 0, &L, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "beyond") != NULL);
}

/* A fake compact string laid out like CPython 3.12's PyASCIIObject / PyCompactUnicodeObject. */
typedef struct {
    uint8_t head[56];
    uint8_t data[64];
} fake_str;

static sop_rmem *cur_mem;

/* Rewrites the string; the reader's page cache holds one collection's snapshot, so flush. */
static void make_str(fake_str *s, int64_t length, unsigned kind, int ascii, const void *data,
                     size_t nbytes)
{
    sop__rmem_flush(cur_mem);
    memset(s, 0, sizeof *s);
    memcpy(s->head + 16, &length, 8);
    uint32_t state = (kind << 2) | (1u << 5) | ((unsigned)ascii << 6);
    memcpy(s->head + 32, &state, 4);
    if (ascii)
        memcpy(s->head + 40, data, nbytes); /* ASCII data follows the 40-byte header */
    else
        memcpy(s->data, data, nbytes);
}

static void test_remote_self(void)
{
    sop_rmem m;
    CHECK_EQ_I(sop__rmem_open(&m, getpid(), "/proc"), 0);
    cur_mem = &m;
    static char buf[3 * 4096];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i * 7);
    char got[5000];
    /* Across a page boundary, twice (the second time from the cache). */
    uint64_t a = (uint64_t)(uintptr_t)buf + 4096 - 100;
    CHECK_EQ_I(sop__rmem_read(&m, a, got, 4500), 0);
    CHECK(memcmp(got, buf + 4096 - 100, 4500) == 0);
    uint64_t before = m.reads;
    CHECK_EQ_I(sop__rmem_read(&m, a, got, 4500), 0);
    CHECK_EQ_I(m.reads, before);
    CHECK(memcmp(got, buf + 4096 - 100, 4500) == 0);
    CHECK_EQ_I(sop__rmem_read(&m, 0, got, 8), -EFAULT);
    CHECK(sop__rmem_read(&m, 8, got, 8) < 0);
    /* Strings through the 3.12 layout. */
    const sop_pylayout *L = sop__pylayout_table(12);
    static fake_str s;
    char out[64];
    make_str(&s, 5, 1, 1, "hello", 5);
    CHECK_EQ_I(sop__rmem_unicode(&m, &L->str, (uint64_t)(uintptr_t)&s, out, sizeof out), 0);
    CHECK_EQ_S(out, "hello");
    const uint16_t ucs2[] = {0x4e2d, 0x6587, 'x'}; /* 中文x */
    make_str(&s, 3, 2, 0, ucs2, sizeof ucs2);
    CHECK_EQ_I(sop__rmem_unicode(&m, &L->str, (uint64_t)(uintptr_t)&s, out, sizeof out), 0);
    CHECK_EQ_S(out, "\xe4\xb8\xad\xe6\x96\x87x");
    const uint32_t ucs4[] = {0x1F600, 0xD800};
    make_str(&s, 2, 4, 0, ucs4, sizeof ucs4);
    CHECK_EQ_I(sop__rmem_unicode(&m, &L->str, (uint64_t)(uintptr_t)&s, out, sizeof out), 0);
    CHECK_EQ_S(out, "\xf0\x9f\x98\x80\xef\xbf\xbd"); /* a lone surrogate becomes U+FFFD */
    make_str(&s, 3, 3, 0, "abc", 3);                 /* kind 3 does not exist */
    CHECK_EQ_I(sop__rmem_unicode(&m, &L->str, (uint64_t)(uintptr_t)&s, out, sizeof out), -EINVAL);
    make_str(&s, 5, 1, 1, "hello", 5);
    CHECK_EQ_I(sop__rmem_unicode(&m, &L->str, (uint64_t)(uintptr_t)&s, out, 3), 0);
    CHECK_EQ_S(out, "he"); /* cut at the buffer, NUL-terminated */
    /* Bytes: ob_size at 16, data at 32. */
    static uint8_t bo[64];
    int64_t bl = 4;
    memcpy(bo + 16, &bl, 8);
    memcpy(bo + 32, "\x01\x02\x03\x04", 4);
    sop__rmem_flush(&m);
    uint8_t *bytes = NULL;
    size_t blen = 0;
    CHECK_EQ_I(sop__rmem_bytes(&m, &L->str, (uint64_t)(uintptr_t)bo, 100, &bytes, &blen), 0);
    CHECK(blen == 4 && bytes && memcmp(bytes, "\x01\x02\x03\x04", 4) == 0);
    free(bytes);
    CHECK_EQ_I(sop__rmem_bytes(&m, &L->str, (uint64_t)(uintptr_t)bo, 3, &bytes, &blen), -E2BIG);
    sop__rmem_close(&m);
}

/* Snapshots (verified walks, issue 12): pages re-read in one batch count as "on snapshot";
 * pages cached before, or read after, count as off it; two pages sharing a cache slot both
 * make it into one snapshot; a snapshot sees what changed since the cache was filled. */
static void test_snapshot_self(void)
{
    sop_rmem m;
    CHECK_EQ_I(sop__rmem_open(&m, getpid(), "/proc"), 0);
    /* three pages 2 MiB apart: the same direct-mapped slot */
    size_t span = (size_t)SOP_RMEM_SLOTS * SOP_RMEM_PAGE;
    uint8_t *area = aligned_alloc(SOP_RMEM_PAGE, 2 * span + 2 * SOP_RMEM_PAGE);
    if (!area) {
        sop__rmem_close(&m);
        return;
    }
    uint64_t *a = (uint64_t *)area, *b = (uint64_t *)(area + span);
    uint64_t *c3 = (uint64_t *)(area + 2 * span);
    *a = 1;
    *b = 2;
    *c3 = 3;
    uint64_t v = 0;
    CHECK_EQ_I(sop__rmem_u64(&m, (uint64_t)(uintptr_t)a, &v), 0);
    CHECK(v == 1);
    *a = 11; /* changed after caching */
    *b = 22;
    *c3 = 33;
    uint64_t addrs[3] = {(uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)b, (uint64_t)(uintptr_t)c3};
    size_t lens[3] = {8, 8, 8};
    CHECK_EQ_I((long)sop__rmem_snapshot(&m, addrs, lens, 3), 3);
    uint64_t off0 = m.off_snapshot;
    CHECK_EQ_I(sop__rmem_u64(&m, addrs[0], &v), 0);
    CHECK(v == 11);
    CHECK_EQ_I(sop__rmem_u64(&m, addrs[1], &v), 0);
    CHECK(v == 22);
    CHECK_EQ_I(sop__rmem_u64(&m, addrs[2], &v), 0);
    CHECK(v == 33);
    CHECK(m.off_snapshot == off0); /* all served by the snapshot, slot clash or not */
    uint64_t other = (uint64_t)(uintptr_t)(area + SOP_RMEM_PAGE);
    CHECK_EQ_I(sop__rmem_u64(&m, other, &v), 0); /* not in the snapshot */
    CHECK(m.off_snapshot == off0 + 1);
    CHECK_EQ_I((long)sop__rmem_snapshot(&m, addrs, lens, 1), 1);
    off0 = m.off_snapshot;
    CHECK_EQ_I(sop__rmem_u64(&m, addrs[1], &v), 0); /* from the older snapshot: off */
    CHECK(m.off_snapshot == off0 + 1);
    free(area);
    sop__rmem_close(&m);
}

/* Two readers sharing one page cache (a window's processes): each reads its own process's
 * memory at the same address, in any order, whatever the other left in the cache; prefetched
 * and snapshot pages of one are never served to the other; the cache outlives either. */
static void test_shared_cache(void)
{
    static uint64_t word[SOP_RMEM_PAGE / 8]; /* the same address in both processes */
    word[0] = 1;
    int go[2], ready[2];
    if (pipe(go) < 0 || pipe(ready) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        word[0] = 2; /* the child's copy differs */
        char c = 0;
        if (write(ready[1], &c, 1) == 1)
            (void)!read(go[0], &c, 1);
        _exit(0);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    sop_rmem self, child;
    CHECK_EQ_I(sop__rmem_open(&self, getpid(), "/proc"), 0);
    CHECK_EQ_I(sop__rmem_open(&child, pid, "/proc"), 0);
    sop__rmem_share(&child, &self);
    CHECK(child.pages == self.pages && child.block == self.block);
    uint64_t a = (uint64_t)(uintptr_t)word, v = 0;
    for (int round = 0; round < 3; round++) {
        CHECK_EQ_I(sop__rmem_u64(&self, a, &v), 0);
        CHECK(v == 1);
        CHECK_EQ_I(sop__rmem_u64(&child, a, &v), 0);
        CHECK(v == 2);
    }
    size_t len = 8;
    CHECK_EQ_I((long)sop__rmem_snapshot(&child, &a, &len, 1), 1);
    CHECK_EQ_I(sop__rmem_u64(&self, a, &v), 0);
    CHECK(v == 1);
    sop__rmem_flush(&self);
    CHECK_EQ_I((long)sop__rmem_prefetch(&self, &a, 1, 8), 1);
    CHECK_EQ_I(sop__rmem_u64(&child, a, &v), 0);
    CHECK(v == 2);
    sop__rmem_close(&self); /* the child's reader keeps the cache */
    CHECK_EQ_I(sop__rmem_u64(&child, a, &v), 0);
    CHECK(v == 2);
    sop__rmem_close(&child);
    c = 0;
    CHECK(write(go[1], &c, 1) == 1);
    waitpid(pid, NULL, 0);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
}

/* GC state and the one frame of a real interpreter child, against what it printed about
 * itself. */
static void test_gc_child(const char *exe, const char *version)
{
    if (access(exe, X_OK) != 0) {
        printf("note: %s absent; GC check skipped\n", exe);
        return;
    }
    int to_child[2], from_child[2];
    if (pipe(to_child) < 0 || pipe(from_child) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[1]);
        close(from_child[0]);
        execl(exe, exe, "-c",
              "import gc, sys\n"
              "junk = [[i] for i in range(5000)]\n"
              "gc.freeze(); gc.disable(); gc.set_threshold(1234, 56, 78)\n"
              "print(gc.get_freeze_count(), *[s['collections'] for s in gc.get_stats()], "
              "flush=True)\n"
              "sys.stdin.read()\n",
              (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    char line[64] = "";
    ssize_t n = 0, r; /* the line may come in several writes */
    while (n < (ssize_t)sizeof line - 1 && !memchr(line, '\n', (size_t)n) &&
           (r = read(from_child[0], line + n, sizeof line - 1 - (size_t)n)) > 0)
        n += r;
    char *end = line;
    long frozen = n > 0 ? strtol(line, &end, 10) : -1;
    long colls[3];
    for (int g = 0; g < 3; g++)
        colls[g] = strtol(end, &end, 10);
    CHECK(frozen > 5000);
    /* The line is printed before sys.stdin.read() starts: wait until the target sleeps in
     * it (its frame then on line 5), at most 5 s, so a loaded machine cannot catch line 4. */
    for (int i = 0; i < 500; i++) {
        char path[64], st[512] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(st, 1, sizeof st - 1, f) : 0;
        if (f)
            fclose(f);
        st[got] = '\0';
        const char *rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'S')
            break;
        usleep(10000);
    }
    sop_python *py = NULL;
    sop_missing miss = {0};
    /* The child prints before it reaches line 5 (sys.stdin.read()): on a loaded host it may still
     * be finishing line 4 when we look, so look again, a bounded number of times. */
    for (int tries = 0; tries < 200; tries++) {
        CHECK_EQ_I(sop__python_collect(pid, "/proc", 0, &py, &miss), 0);
        /* the last try is kept and checked below: a child never seen on line 5 fails */
        if (!py || tries == 199 ||
            (py->nthreads == 1 && py->threads[0].nframes == 1 &&
             py->threads[0].frames[0].line == 5))
            break;
        sop__python_free(py);
        sop__missing_free(&miss);
        py = NULL;
        memset(&miss, 0, sizeof miss);
        usleep(25 * 1000);
    }
    if (py) {
        CHECK_EQ_S(py->version, version);
        CHECK_EQ_I(py->gc_enabled, 0);
        CHECK_EQ_I(py->gc_collecting, 0);
        CHECK_EQ_I(py->gc_threshold[0], 1234);
        CHECK_EQ_I(py->gc_threshold[1], 56);
        CHECK_EQ_I(py->gc_threshold[2], 78);
        CHECK_EQ_I(py->gc_frozen, frozen);
        for (int gen = 0; gen < 3; gen++)
            CHECK_EQ_I(py->gc_collections[gen], colls[gen]);
        CHECK_EQ_I(py->nthreads, 1);
        CHECK(py->nthreads == 1 && py->threads[0].tid == pid);
        CHECK(py->nthreads == 1 && py->threads[0].nframes == 1 &&
              strcmp(py->threads[0].frames[0].func, "<module>") == 0 &&
              py->threads[0].frames[0].line == 5);
    }
    for (size_t i = 0; i < miss.n; i++)
        fprintf(stderr, "%s: missing: %s: %s\n", exe, miss.items[i].probe, miss.items[i].reason);
    CHECK_EQ_I(miss.n, 0);
    sop__python_free(py);
    sop__missing_free(&miss);
    close(to_child[1]);
    close(from_child[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* Gone: the reaped child. */
    sop_missing m3 = {0};
    CHECK_EQ_I(sop__python_collect(pid, "/proc", 0, &py, &m3), -ESRCH);
    sop__missing_free(&m3);
}

/* asyncio's loop read from outside a real child: BaseEventLoop._run_once's frame carries the
 * turn (its end_time, a float of the monotonic clock: plausible, never decreasing, a new value
 * as turns go by) and Handle._run's frame the Handle it runs. The child runs one 2 ms callback
 * per turn, each rescheduled with call_soon (a new Handle every turn). */
typedef struct {
    int seen;               /* samples inside a callback */
    int turns, handles;     /* ... with the turn / the Handle read */
    int distinct, backward; /* turn values unlike the one before; lower than the one before */
    double last, first;
} turns_seen;

static void turns_cb(void *ctx, const sop_pysample *t)
{
    turns_seen *s = ctx;
    uint64_t turn = 0, handle = 0;
    bool in_cb = false;
    for (size_t i = 0; i < t->nframes; i++) {
        const char *fn = t->frames[i].func;
        if (strcmp(fn, "tick") == 0)
            in_cb = true;
        if (strstr(fn, "_run_once"))
            turn = t->frames[i].obj;
        if (strcmp(fn, "Handle._run") == 0 || strcmp(fn, "_run") == 0)
            handle = t->frames[i].obj;
    }
    if (!in_cb)
        return;
    s->seen++;
    s->handles += handle != 0;
    if (!turn)
        return;
    double v;
    memcpy(&v, &turn, sizeof v);
    if (!(v > 0.5 && v < 1e10)) /* seconds of CLOCK_MONOTONIC: not a float of that clock */
        v = -1;
    if (s->turns && v != s->last)
        s->distinct++;
    if (s->turns && v < s->last)
        s->backward++;
    if (!s->turns)
        s->first = v;
    s->last = v;
    s->turns++;
}

static void test_asyncio_turns(const char *exe)
{
    if (access(exe, X_OK) != 0) {
        printf("note: %s absent; asyncio turn check skipped\n", exe);
        return;
    }
    int from_child[2];
    if (pipe(from_child) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(from_child[1], 1);
        close(from_child[0]);
        execl(exe, exe, "-c",
              "import asyncio, time\n"
              "def tick(loop):\n"
              "    t = time.perf_counter()\n"
              "    while time.perf_counter() - t < 0.002: pass\n"
              "    loop.call_soon(tick, loop)\n"
              "loop = asyncio.new_event_loop()\n"
              "loop.call_soon(tick, loop)\n"
              "print('ready', flush=True)\n"
              "loop.run_forever()\n",
              (char *)NULL);
        _exit(127);
    }
    close(from_child[1]);
    char line[16];
    CHECK(read(from_child[0], line, sizeof line) > 0);
    sop_pysampler *smp = NULL;
    sop_missing miss = {0};
    turns_seen s = {0};
    if (sop__python_open(pid, "/proc", &smp, &miss) == 0) {
        /* until 40 samples inside the callback, 10 s at most (a loaded host) */
        for (int i = 0; i < 2000 && s.seen < 40; i++) {
            sop__python_sample(smp, turns_cb, &s);
            usleep(5000);
        }
        sop__python_close(smp);
    }
    CHECK(s.seen >= 40);
    CHECK_EQ_I(s.handles, s.seen);
    CHECK_EQ_I(s.turns, s.seen);
    CHECK(s.first > 0); /* a float of the monotonic clock */
    CHECK_EQ_I(s.backward, 0);
    /* samples 5 ms apart, turns of 2 ms of wall time or more: the turn changes as they go by
     * (how often depends on the CPU the child gets: a loaded host lengthens its turns) */
    CHECK(s.distinct >= 3);
    if (s.seen < 40 || s.turns != s.seen || s.backward || s.distinct < 3)
        fprintf(stderr, "%s: seen %d handles %d turns %d distinct %d backward %d first %g\n", exe,
                s.seen, s.handles, s.turns, s.distinct, s.backward, s.first);
    sop__missing_free(&miss);
    close(from_child[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The GIL's switch count read from a real child (struct _gil_runtime_state, every version), over
 * a fixed amount of work whatever the host's load: two threads passing a token back and forth
 * 1000 times through two Events hand the GIL to each other at every pass (each waits with it
 * released, the other takes it): at least 1000 switches; one thread making 1000 GIL-releasing
 * calls (time.sleep(0)) with nobody else wanting the GIL stays its last holder: none. The
 * interval is the default 5000 µs. */
/* Read one line of the child's (it may come in several writes): true when it came whole. */
static bool read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r = 0;
    while (n + 1 < cap && (r = read(fd, buf + n, 1)) == 1)
        if (buf[n++] == '\n')
            break;
    buf[n] = '\0';
    return n > 0 && buf[n - 1] == '\n';
}

static int64_t gil_switch_gain(const char *exe, bool two, int64_t *interval)
{
    const char *code = two ? "import sys, threading\n"
                             "a, b = threading.Event(), threading.Event()\n"
                             "def pong():\n"
                             "    for _ in range(1000): a.wait(); a.clear(); b.set()\n"
                             "threading.Thread(target=pong, daemon=True).start()\n"
                             "print('ready', flush=True)\n"
                             "sys.stdin.readline()\n"
                             "for _ in range(1000): a.set(); b.wait(); b.clear()\n"
                             "print('done', flush=True)\n"
                             "sys.stdin.readline()\n"
                           : "import sys, time\n"
                             "print('ready', flush=True)\n"
                             "sys.stdin.readline()\n"
                             "for _ in range(1000): time.sleep(0)\n"
                             "print('done', flush=True)\n"
                             "sys.stdin.readline()\n";
    int to_child[2], from_child[2];
    if (pipe(to_child) < 0 || pipe(from_child) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[1]);
        close(from_child[0]);
        execl(exe, exe, "-c", code, (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    char line[16];
    int64_t gain = -1;
    *interval = SOP_NA;
    sop_pysampler *smp = NULL;
    sop_missing miss = {0};
    sop_pygc a, b;
    if (read_line(from_child[0], line, sizeof line) &&
        sop__python_open(pid, "/proc", &smp, &miss) == 0 && sop__python_sample_gc(smp, &a) == 0 &&
        write(to_child[1], "\n", 1) == 1 && read_line(from_child[0], line, sizeof line) &&
        sop__python_sample_gc(smp, &b) == 0 && a.gil_switches != SOP_NA &&
        b.gil_switches != SOP_NA) {
        gain = b.gil_switches - a.gil_switches;
        *interval = b.gil_interval_us;
    }
    sop__python_close(smp);
    sop__missing_free(&miss);
    close(to_child[1]);
    close(from_child[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return gain;
}

static void test_gil_switches(const char *exe)
{
    if (access(exe, X_OK) != 0) {
        printf("note: %s absent; GIL switch check skipped\n", exe);
        return;
    }
    int64_t interval = 0;
    int64_t two = gil_switch_gain(exe, true, &interval);
    CHECK(two >= 1000);
    CHECK_EQ_I(interval, 5000);
    int64_t one = gil_switch_gain(exe, false, &interval);
    CHECK(one >= 0 && one <= 2);
    if (two < 1000 || one < 0 || one > 2)
        fprintf(stderr,
                "%s: GIL switches: two threads passing a token 1000 times %lld, one "
                "thread's 1000 releases %lld\n",
                exe, (long long)two, (long long)one);
}

static void test_not_python(void)
{
    sop_python *py = NULL;
    /* Not CPython: this very test program. */
    sop_missing m2 = {0};
    CHECK_EQ_I(sop__python_collect(getpid(), "/proc", 0, &py, &m2), -ENOEXEC);
    CHECK(py == NULL);
    CHECK(m2.n >= 1 && strstr(m2.items[m2.n - 1].reason, "not a CPython process") != NULL);
    sop__missing_free(&m2);
}

/* The asyncio fields of every table (probes/python/asyncio_read.c): placed, inside what the
 * reader reads (TaskObj: 200 bytes; a frame header: SOP_PYLAYOUT_MAX_FRAME_READ), and one way
 * to the coroutine's frame per version. The numbers themselves are checked against live
 * interpreters by tests/e2e/test_tasks_conformance.py. */
static void test_asyncio_fields(void)
{
    for (int minor = 8; minor <= 13; minor++) {
        const sop_pylayout *L = sop__pylayout_table(minor);
        CHECK(L != NULL);
        if (!L)
            continue;
        const uint32_t task[] = {L->fut_loop,   L->fut_callback0, L->fut_callbacks,
                                 L->fut_result, L->fut_state,     L->task_fut_waiter,
                                 L->task_coro,  L->task_name,     L->task_must_cancel};
        for (size_t i = 0; i < sizeof task / sizeof task[0]; i++)
            CHECK(task[i] >= 16 && task[i] + 8 <= 200);
        CHECK(L->task_num_cancels == 0 || L->task_num_cancels + 4 <= 200);
        CHECK((minor >= 11) == (L->task_num_cancels != 0));
        CHECK(L->task_must_cancel_bit < 32);
        CHECK(L->futiter_future == 16 && L->func_code >= 16);
        if (minor <= 10) {
            CHECK(L->gen_frame && !L->gen_iframe && L->co_code);
            CHECK((L->fo_stacktop != 0) == (minor <= 9) &&
                  (L->fo_stackdepth != 0) == (minor == 10));
            CHECK(L->fo_state && L->fo_lasti + 4 <= 128 && L->fo_valuestack + 8 <= 128);
        } else {
            CHECK(!L->gen_frame && L->gen_iframe > L->gen_state && L->gen_state >= 16);
            CHECK(L->if_stacktop + 4 <= SOP_PYLAYOUT_MAX_FRAME_READ);
            CHECK(L->frame_localsplus > L->if_stacktop);
        }
    }
}

int main(void)
{
    test_elf_real();
    test_asyncio_fields();
    test_maps();
    test_linetables();
    test_debug_offsets();
    test_remote_self();
    test_snapshot_self();
    test_shared_cache();
    test_gc_child(DEB_PY311, "3.11.2");
    test_gc_child("/root/.pyenv/versions/3.8.18/bin/python3.8", "3.8.18");
    test_gc_child("/root/.pyenv/versions/3.9.18/bin/python3.9", "3.9.18");
    test_gc_child("/root/.pyenv/versions/3.10.13/bin/python3.10", "3.10.13");
    test_gc_child("/root/.pyenv/versions/3.11.7/bin/python3.11", "3.11.7");
    test_gc_child("/root/.pyenv/versions/3.12.1/bin/python3.12", "3.12.1");
    test_gc_child("/root/.pyenv/versions/3.13.0/bin/python3.13", "3.13.0");
    static const char *const pys[] = {
        DEB_PY311,
        "/root/.pyenv/versions/3.8.18/bin/python3.8",
        "/root/.pyenv/versions/3.9.18/bin/python3.9",
        "/root/.pyenv/versions/3.10.13/bin/python3.10",
        "/root/.pyenv/versions/3.12.1/bin/python3.12",
        "/root/.pyenv/versions/3.13.0/bin/python3.13",
    };
    for (size_t i = 0; i < sizeof pys / sizeof pys[0]; i++) {
        test_asyncio_turns(pys[i]);
        test_gil_switches(pys[i]);
    }
    test_not_python();
    return t_done();
}
