/* remote_mem.h — reading another process's memory without stopping it: process_vm_readv,
 * falling back to pread on /proc/PID/mem, through a small per-collection page cache; bounded
 * string reads of PyUnicode / PyBytes objects. Depends on libc only. */
#ifndef SOP_REMOTE_MEM_H
#define SOP_REMOTE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOP_RMEM_PAGE 4096u
#define SOP_RMEM_SLOTS 512u /* 2 MiB of cached target pages per collection */

typedef struct {
    uint64_t addr; /* page address; 0 = empty slot */
    uint8_t *data; /* SOP_RMEM_PAGE bytes inside sop_rmem.block */
    uint32_t gen;  /* snapshot that loaded it (sop_rmem.snap_gen); 0 = any other read */
} sop_rmem_page;

/* A stand-in for the target's memory (fuzzing, tests): fill buf with len bytes at addr and
 * return 0, or return -errno (-EFAULT for unmapped). */
typedef int (*sop_rmem_source)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The cache's pages: owned by one reader, or shared by the readers of one sampler (their
 * processes are sampled one after the other, each sample starting from an empty cache). */
typedef struct sop_rmem_store sop_rmem_store;

typedef struct {
    int pid;
    int mem_fd;            /* /proc/PID/mem, opened lazily when process_vm_readv is refused */
    bool use_mem_fd;       /* process_vm_readv failed with ENOSYS/EPERM: go through the file */
    int last_errno;        /* errno of the last failed read */
    sop_rmem_store *store; /* the slots and their data, perhaps shared (sop__rmem_share) */
    sop_rmem_page *pages;  /* store's SOP_RMEM_SLOTS slots, direct-mapped by page number */
    uint8_t *block;        /* their data, mapped untouched: only pages used become resident */
    uint64_t reads;        /* syscalls issued (for tests and benchmarks) */
    uint32_t snap_gen;     /* number of the last snapshot (sop__rmem_snapshot) */
    uint64_t off_snapshot; /* page accesses not served by the last snapshot (misses included) */
    char proc_root[128];
    sop_rmem_source source; /* when set, every read goes to it instead of the process */
    void *source_ctx;
} sop_rmem;

/* Set up a reader for `pid` (proc_root locates PID/mem). Returns 0 or -ENOMEM. */
int sop__rmem_open(sop_rmem *m, int pid, const char *proc_root);
void sop__rmem_close(sop_rmem *m);
/* Forget cached pages (after a torn read, before a retry). */
void sop__rmem_flush(sop_rmem *m);
/* Make m use the page cache of `with` (both open), freeing its own: readers used one after
 * the other need one cache's memory, not one each. A reader finds the cache empty whenever
 * another one used it since (never another process's pages). */
void sop__rmem_share(sop_rmem *m, sop_rmem *with);

/* Read exactly len bytes at addr into buf (through the cache). Returns 0 or -errno
 * (-EFAULT for unmapped, -ESRCH when the process is gone, -EPERM/-EACCES when refused). */
int sop__rmem_read(sop_rmem *m, uint64_t addr, void *buf, size_t len);
/* A NUL-terminated C string with no control character at addr (a type's tp_name, which may
 * hold any UTF-8 letter) into out, bounded by cap: 0 (cut at cap, never inside a UTF-8
 * sequence), -EINVAL when empty or holding a control, or the read's -errno. */
int sop__rmem_read_cstr(sop_rmem *m, uint64_t addr, char *out, size_t cap);
/* Read bypassing the cache (for values that change between reads, e.g. the GIL word). */
int sop__rmem_read_direct(sop_rmem *m, uint64_t addr, void *buf, size_t len);
int sop__rmem_u64(sop_rmem *m, uint64_t addr, uint64_t *out);
/* Load the pages covering [addrs[i], addrs[i] + len) into the cache with as few syscalls as
 * possible (one process_vm_readv with many iovecs). Best effort: pages that fail are simply
 * not cached. Returns the number of pages loaded. */
size_t sop__rmem_prefetch(sop_rmem *m, const uint64_t *addrs, size_t n, size_t len);
/* The same for [addrs[i], addrs[i] + lens[i]), but pages already cached are read again: a
 * near-instant copy of e.g. a whole frame chain (one syscall for up to 256 pages). A walk
 * that then runs from the cache alone (sop_rmem.reads unchanged) read one snapshot. Returns
 * the pages loaded (0 with a stand-in source or the /proc/PID/mem fallback). */
size_t sop__rmem_snapshot(sop_rmem *m, const uint64_t *addrs, const size_t *lens, size_t n);

/* Offsets of the string objects of one interpreter version (filled from py_layouts). */
typedef struct {
    uint32_t uni_length, uni_state, uni_ascii_size, uni_compact_size;
    uint32_t bytes_size, bytes_sval;
    int state_kind_shift; /* 2 on every version handled (interned takes 2 bits) */
} sop_pystr_layout;

/* Read a PyUnicode object into UTF-8 `out` (cap bytes, NUL-terminated, truncated at cap).
 * Compact ASCII/UCS1/UCS2/UCS4 only; lengths above max_chars are cut. Returns 0 or -errno
 * (-EINVAL for a malformed or non-compact object). */
int sop__rmem_unicode(sop_rmem *m, const sop_pystr_layout *L, uint64_t obj, char *out, size_t cap);
/* Read a PyBytes object's content (at most max_len bytes) into a malloc'd buffer. Returns 0
 * or -errno; -E2BIG when longer than max_len. */
int sop__rmem_bytes(sop_rmem *m, const sop_pystr_layout *L, uint64_t obj, size_t max_len,
                    uint8_t **out, size_t *out_len);

/* Encode code point cp as UTF-8 into out (room for 4); returns the byte count (U+FFFD for
 * invalid code points and surrogates). Pure. */
size_t sop__utf8_put(uint32_t cp, char *out);

#endif
