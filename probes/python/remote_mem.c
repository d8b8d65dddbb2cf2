/* remote_mem.c — reading target memory without stopping it: process_vm_readv (falling back to
 * /proc/PID/mem), a direct-mapped page cache valid for one collection, and bounded PyUnicode /
 * PyBytes decoding. Depends on libc only. */
#include "remote_mem.h"

#include "../procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

struct sop_rmem_store {
    sop_rmem_page pages[SOP_RMEM_SLOTS];
    uint8_t *block;        /* SOP_RMEM_SLOTS pages, mmap'ed: untouched ones cost nothing */
    const sop_rmem *owner; /* the reader whose pages the slots hold (NULL: none) */
    int refs;
};

static sop_rmem_store *store_new(void)
{
    sop_rmem_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    /* mmap rather than malloc: malloc may hand back memory touched before (its threshold for
     * mmap rises after big frees), which stays resident; this is resident only where used
     * and returned whole at the end. */
    void *b = mmap(NULL, (size_t)SOP_RMEM_SLOTS * SOP_RMEM_PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        free(st);
        return NULL;
    }
    st->block = b;
    for (size_t i = 0; i < SOP_RMEM_SLOTS; i++)
        st->pages[i].data = st->block + i * SOP_RMEM_PAGE;
    st->refs = 1;
    return st;
}

static void store_drop(sop_rmem_store *st, const sop_rmem *m)
{
    if (!st)
        return;
    if (st->owner == m)
        st->owner = NULL;
    if (--st->refs > 0)
        return;
    munmap(st->block, (size_t)SOP_RMEM_SLOTS * SOP_RMEM_PAGE);
    free(st);
}

static void attach(sop_rmem *m, sop_rmem_store *st)
{
    m->store = st;
    m->pages = st ? st->pages : NULL;
    m->block = st ? st->block : NULL;
}

/* Before any use of the slots: a cache another reader filled is emptied first. */
static void claim(sop_rmem *m)
{
    sop_rmem_store *st = m->store;
    if (!st || st->owner == m)
        return;
    for (size_t i = 0; i < SOP_RMEM_SLOTS; i++)
        st->pages[i].addr = 0;
    st->owner = m;
}

int sop__rmem_open(sop_rmem *m, int pid, const char *proc_root)
{
    memset(m, 0, sizeof *m);
    m->mem_fd = -1;
    snprintf(m->proc_root, sizeof m->proc_root, "%s", proc_root ? proc_root : "/proc");
    m->pid = sop__live_task(m->proc_root, pid); /* a zombie leader has no memory: a thread does */
    sop_rmem_store *st = store_new();
    if (!st)
        return -ENOMEM;
    attach(m, st);
    st->owner = m;
    return 0;
}

void sop__rmem_share(sop_rmem *m, sop_rmem *with)
{
    if (!with->store || m->store == with->store)
        return;
    store_drop(m->store, m);
    with->store->refs++;
    attach(m, with->store);
}

void sop__rmem_close(sop_rmem *m)
{
    if (m->mem_fd >= 0)
        close(m->mem_fd);
    m->mem_fd = -1;
    store_drop(m->store, m);
    attach(m, NULL);
}

void sop__rmem_flush(sop_rmem *m)
{
    if (!m->store)
        return;
    if (m->store->owner != m) {
        claim(m);
        return;
    }
    for (size_t i = 0; i < SOP_RMEM_SLOTS; i++)
        m->pages[i].addr = 0;
}

static int read_mem_fd(sop_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (m->mem_fd < 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d/mem", m->proc_root, m->pid);
        m->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (m->mem_fd < 0)
            return -(m->last_errno = errno);
    }
    size_t done = 0;
    while (done < len) {
        m->reads++;
        ssize_t n = pread(m->mem_fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -(m->last_errno = errno == EIO ? EFAULT : errno);
        }
        if (n == 0)
            return -(m->last_errno = EFAULT);
        done += (size_t)n;
    }
    return 0;
}

int sop__rmem_read_direct(sop_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (addr == 0 || addr + len < addr)
        return -EFAULT;
    if (m->source) {
        m->reads++;
        int r = m->source(m->source_ctx, addr, buf, len);
        return r < 0 ? -(m->last_errno = -r) : 0;
    }
    if (!m->use_mem_fd) {
        struct iovec local = {buf, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        m->reads++;
        ssize_t n = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
        if (n == (ssize_t)len)
            return 0;
        if (n >= 0)
            return -(m->last_errno = EFAULT); /* partial: the tail is unmapped */
        int e = errno;
        if (e == ENOSYS || e == EPERM) {
            /* Some sandboxes refuse the syscall but allow the file: try it from now on. */
            int r = read_mem_fd(m, addr, buf, len);
            if (r == 0)
                m->use_mem_fd = true;
            return r == -ENOENT ? -ESRCH : r;
        }
        return -(m->last_errno = e);
    }
    return read_mem_fd(m, addr, buf, len);
}

/* Slots a page may occupy: i, i ^ 1, i ^ 2, i ^ 3 (SOP_RMEM_SLOTS % 4 == 0). */
#define SNAP_WAYS 4u

/* Read one target page into its cache slot; returns the slot or NULL (errno-style in *err). */
static const uint8_t *cached_page(sop_rmem *m, uint64_t page, int *err)
{
    size_t i = (page / SOP_RMEM_PAGE) % SOP_RMEM_SLOTS;
    sop_rmem_page *slot = &m->pages[i];
    /* A snapshot puts a page whose slot was taken in the same batch into another slot of its
     * group of SNAP_WAYS (i ^ 1, i ^ 2, ...); an ordinary read fills slot i. */
    for (size_t w = 0; page != 0 && w < SNAP_WAYS; w++) {
        sop_rmem_page *c = &m->pages[i ^ w];
        if (c->addr == page) {
            m->off_snapshot += c->gen != m->snap_gen;
            return c->data;
        }
    }
    m->off_snapshot++;
    slot->addr = 0;
    slot->gen = 0;
    int r = sop__rmem_read_direct(m, page, slot->data, SOP_RMEM_PAGE);
    if (r < 0) {
        *err = r;
        return NULL;
    }
    slot->addr = page;
    return slot->data;
}

int sop__rmem_read(sop_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (addr < SOP_RMEM_PAGE || addr + len < addr)
        return -EFAULT;
    if (!m->pages || len > 4 * SOP_RMEM_PAGE)
        return sop__rmem_read_direct(m, addr, buf, len);
    claim(m);
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t page = a & ~(uint64_t)(SOP_RMEM_PAGE - 1);
        size_t off = (size_t)(a - page);
        size_t n = SOP_RMEM_PAGE - off;
        if (n > len - done)
            n = len - done;
        int err = 0;
        const uint8_t *p = cached_page(m, page, &err);
        if (!p) {
            if (err == -ESRCH || err == -EPERM || err == -EACCES)
                return err;
            /* A page that cannot be read whole (guard page next door): read just the bytes. */
            return sop__rmem_read_direct(m, addr, buf, len);
        }
        memcpy((char *)buf + done, p + off, n);
        done += n;
    }
    return 0;
}

#define PREFETCH_MAX_IOV 256

static size_t load_pages(sop_rmem *m, const uint64_t *addrs, const size_t *lens, size_t n,
                         size_t len, bool force)
{
    if (!m->pages || m->use_mem_fd || m->source)
        return 0;
    claim(m);
    struct iovec local[PREFETCH_MAX_IOV], remote[PREFETCH_MAX_IOV];
    sop_rmem_page *slots[PREFETCH_MAX_IOV];
    uint64_t pages[PREFETCH_MAX_IOV];
    size_t k = 0, loaded = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && lens)
            len = lens[i];
        if (i < n && len > 0 && len <= 4 * SOP_RMEM_PAGE && addrs[i] >= SOP_RMEM_PAGE &&
            addrs[i] + len > addrs[i]) {
            uint64_t first = addrs[i] & ~(uint64_t)(SOP_RMEM_PAGE - 1);
            uint64_t last = (addrs[i] + len - 1) & ~(uint64_t)(SOP_RMEM_PAGE - 1);
            for (uint64_t pg = first; pg <= last && k < PREFETCH_MAX_IOV; pg += SOP_RMEM_PAGE) {
                size_t si = (pg / SOP_RMEM_PAGE) % SOP_RMEM_SLOTS;
                sop_rmem_page *slot = NULL;
                bool taken = false, dup = false;
                for (size_t w = 0; w < SNAP_WAYS && !force; w++)
                    taken = taken || m->pages[si ^ w].addr == pg;
                for (size_t j = 0; j < k && !dup; j++)
                    dup = pages[j] == pg;
                /* the first slot of the group no other page of this batch uses (a prefetch
                 * only tries slot si: it keeps the first page of a slot) */
                for (size_t w = 0; w < (force ? SNAP_WAYS : 1) && !slot && !taken && !dup; w++) {
                    sop_rmem_page *c = &m->pages[si ^ w];
                    bool used = false;
                    for (size_t j = 0; j < k && !used; j++)
                        used = slots[j] == c;
                    if (!used)
                        slot = c;
                }
                if (!slot)
                    continue;
                for (size_t w = 0; w < SNAP_WAYS; w++) /* no older copy left next to the new */
                    if (m->pages[si ^ w].addr == pg && &m->pages[si ^ w] != slot)
                        m->pages[si ^ w].addr = 0;
                slots[k] = slot;
                pages[k] = pg;
                local[k].iov_base = slot->data;
                local[k].iov_len = SOP_RMEM_PAGE;
                remote[k].iov_base = (void *)(uintptr_t)pg;
                remote[k].iov_len = SOP_RMEM_PAGE;
                k++;
            }
        }
        if ((i == n || k == PREFETCH_MAX_IOV) && k > 0) {
            for (size_t j = 0; j < k; j++)
                slots[j]->addr = 0;
            m->reads++;
            ssize_t got = process_vm_readv(m->pid, local, k, remote, k, 0);
            /* The kernel stops at the first page it cannot read: the ones before are whole. */
            size_t whole = got > 0 ? (size_t)got / SOP_RMEM_PAGE : 0;
            for (size_t j = 0; j < whole && j < k; j++) {
                slots[j]->addr = pages[j];
                slots[j]->gen = force ? m->snap_gen + 1 : 0;
            }
            loaded += whole;
            k = 0;
        }
    }
    return loaded;
}

size_t sop__rmem_prefetch(sop_rmem *m, const uint64_t *addrs, size_t n, size_t len)
{
    return load_pages(m, addrs, NULL, n, len, false);
}

size_t sop__rmem_snapshot(sop_rmem *m, const uint64_t *addrs, const size_t *lens, size_t n)
{
    size_t got = load_pages(m, addrs, lens, n, 0, true);
    m->snap_gen++; /* pages of older snapshots now count as off-snapshot */
    return got;
}

int sop__rmem_u64(sop_rmem *m, uint64_t addr, uint64_t *out)
{
    return sop__rmem_read(m, addr, out, sizeof *out);
}

size_t sop__utf8_put(uint32_t cp, char *out)
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

#define MAX_STR_CHARS 1024

int sop__rmem_unicode(sop_rmem *m, const sop_pystr_layout *L, uint64_t obj, char *out, size_t cap)
{
    if (cap == 0)
        return -EINVAL;
    out[0] = '\0';
    uint8_t head[128];
    if (L->uni_compact_size > sizeof head || L->uni_state + 4 > sizeof head ||
        L->uni_length + 8 > sizeof head)
        return -EINVAL;
    int r = sop__rmem_read(m, obj, head, L->uni_compact_size);
    if (r < 0)
        return r;
    int64_t length;
    uint32_t state;
    memcpy(&length, head + L->uni_length, sizeof length);
    memcpy(&state, head + L->uni_state, sizeof state);
    unsigned kind = (state >> L->state_kind_shift) & 7u;
    bool compact = (state >> (L->state_kind_shift + 3)) & 1u;
    bool ascii = (state >> (L->state_kind_shift + 4)) & 1u;
    if (length < 0 || !compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
        return -EINVAL;
    size_t n = (size_t)length > MAX_STR_CHARS ? MAX_STR_CHARS : (size_t)length;
    uint64_t data = obj + (ascii ? L->uni_ascii_size : L->uni_compact_size);
    uint8_t raw[MAX_STR_CHARS * 4];
    r = sop__rmem_read(m, data, raw, n * kind);
    if (r < 0)
        return r;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp;
        if (kind == 1)
            cp = raw[i];
        else if (kind == 2)
            cp = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
        else
            memcpy(&cp, raw + 4 * i, 4);
        char enc[4];
        size_t k = sop__utf8_put(cp == 0 ? 0xFFFD : cp, enc);
        if (o + k + 1 > cap)
            break;
        memcpy(out + o, enc, k);
        o += k;
    }
    out[o] = '\0';
    return 0;
}

int sop__rmem_bytes(sop_rmem *m, const sop_pystr_layout *L, uint64_t obj, size_t max_len,
                    uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    int64_t size;
    int r = sop__rmem_read(m, obj + L->bytes_size, &size, sizeof size);
    if (r < 0)
        return r;
    if (size < 0)
        return -EINVAL;
    if ((uint64_t)size > max_len)
        return -E2BIG;
    uint8_t *buf = malloc((size_t)size + 1);
    if (!buf)
        return -ENOMEM;
    r = sop__rmem_read(m, obj + L->bytes_sval, buf, (size_t)size);
    if (r < 0) {
        free(buf);
        return r;
    }
    *out = buf;
    *out_len = (size_t)size;
    return 0;
}

/* A NUL-terminated C string at addr (a type's tp_name), printable ASCII only, bounded by cap:
 * 0, -EINVAL (empty, not printable) or the read's -errno; cut at cap. Reads up to each page's
 * end, so a name near a mapping's end stays readable. */
int sop__rmem_read_cstr(sop_rmem *m, uint64_t addr, char *out, size_t cap)
{
    size_t o = 0;
    while (o + 1 < cap) {
        size_t n = SOP_RMEM_PAGE - (size_t)((addr + o) & (SOP_RMEM_PAGE - 1));
        if (n > cap - 1 - o)
            n = cap - 1 - o;
        int r = sop__rmem_read(m, addr + o, out + o, n);
        if (r < 0)
            return r;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)out[o + i];
            if (c == '\0')
                return o + i > 0 ? 0 : -EINVAL;
            /* a control is no name; a byte >= 0x80 may be (a class 样本 is a Python 3
             * identifier): the writers escape what is not UTF-8 */
            if (c < 0x20 || c == 0x7f)
                return -EINVAL;
        }
        o += n;
    }
    /* cut at cap: not inside a UTF-8 sequence (drop a lead byte whose sequence is cut short) */
    size_t end = cap - 1, k = end;
    while (k > 0 && end - k < 4 && ((unsigned char)out[k - 1] & 0xC0) == 0x80)
        k--;
    if (k > 0 && (unsigned char)out[k - 1] >= 0xC0) {
        unsigned char lead = (unsigned char)out[k - 1];
        size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        if (end - (k - 1) < want)
            end = k - 1;
    }
    out[end] = '\0';
    return end > 0 ? 0 : -EINVAL;
}
