/* kmsg_memo.c — the kernel log's OOM records remembered in a small file between reads (see
 * kmsg_memo.h for why a memo is exact and where it lives). The file: a header (magic, record
 * size, count, boot id, kill count, when that count was first seen, when the parse began) and
 * the records as they are in memory; any mismatch, a wrong owner or mode, a link or a cut file
 * makes it unused. Depends on libc, kmsg_memo.h. */
#include "kmsg_memo.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MEMO_NAME "kmsg-oom"
#define MEMO_MAGIC "SOPKOOM1"

typedef struct {
    char magic[8];
    uint32_t rec_size, n;
    char boot_id[40];
    int64_t kills;
    double first_s; /* CLOCK_BOOTTIME when the counter was first seen at kills */
    double read_s;  /* CLOCK_BOOTTIME when the parse held here began */
} memo_hdr;

/* Owned by the caller and not writable by group or others. */
static bool trusted(const struct stat *st)
{
    return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int sop__state_dir_open(void)
{
    const char *d = secure_getenv("SOP_STATE_DIR"); /* sopctl sets /run/sop for root */
    if (!d || !*d)
        return -1;
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && mkdir(d, 0700) == 0)
        fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || !trusted(&st)) {
        close(fd);
        return -1;
    }
    return fd;
}

bool sop__kmsg_key_now(sop_kmsg_key *key, int64_t kills)
{
    memset(key, 0, sizeof *key);
    key->kills = kills;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, key->boot_id, sizeof key->boot_id - 1);
    close(fd);
    if (n < 32)
        return false;
    key->boot_id[n] = '\0';
    key->boot_id[strcspn(key->boot_id, "\n")] = '\0';
    struct timespec ts;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
        return false;
    key->now_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    return kills > 0;
}

/* The memo's header, when the file is there, trusted, whole and of this build's layout. */
static int open_memo(int dirfd, memo_hdr *h)
{
    int fd = openat(dirfd, MEMO_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !trusted(&st) ||
        pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h ||
        memcmp(h->magic, MEMO_MAGIC, sizeof h->magic) != 0 || h->rec_size != sizeof(sop_oom) ||
        h->n > SOP_OOM_MAX ||
        (uint64_t)st.st_size != sizeof *h + (uint64_t)h->n * sizeof(sop_oom)) {
        close(fd);
        return -1;
    }
    h->boot_id[sizeof h->boot_id - 1] = '\0';
    return fd;
}

#define TERMINATE(s) ((s)[sizeof(s) - 1] = '\0')

bool sop__kmsg_memo_get(int dirfd, const sop_kmsg_key *key, double min_up_s, double btime,
                        sop_oom_list *out)
{
    sop__oom_list_init(out, btime);
    memo_hdr h;
    int fd = open_memo(dirfd, &h);
    if (fd < 0)
        return false;
    /* this boot, this count, and a parse begun long enough after the count was seen */
    bool ok = strcmp(h.boot_id, key->boot_id) == 0 && h.kills == key->kills &&
              isfinite(h.first_s) && isfinite(h.read_s) &&
              h.read_s - h.first_s >= SOP_KMSG_MEMO_SETTLE_S && h.read_s <= key->now_s;
    size_t bytes = (size_t)h.n * sizeof(sop_oom);
    if (ok && bytes > 0)
        ok = pread(fd, out->items, bytes, sizeof h) == (ssize_t)bytes;
    close(fd);
    if (!ok) {
        sop__oom_list_init(out, btime);
        return false;
    }
    out->n = h.n;
    for (size_t i = 0; i < out->n; i++) {
        sop_oom *o = &out->items[i];
        TERMINATE(o->comm);
        TERMINATE(o->constraint);
        TERMINATE(o->task_memcg);
        TERMINATE(o->oom_memcg);
        TERMINATE(o->invoker);
        o->time = isfinite(btime) && isfinite(o->uptime_s) ? btime + o->uptime_s : NAN;
    }
    sop__oom_list_keep_since(out, min_up_s);
    return true;
}

void sop__kmsg_memo_put(int dirfd, const sop_kmsg_key *key, const sop_oom_list *l)
{
    memo_hdr h = {0};
    double first = key->now_s;
    int old = open_memo(dirfd, &h);
    if (old >= 0) {
        close(old);
        if (strcmp(h.boot_id, key->boot_id) == 0 && h.kills == key->kills && h.first_s < first)
            first = h.first_s; /* the count was already this when an earlier run saw it */
    }
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MEMO_MAGIC, sizeof h.magic);
    h.rec_size = sizeof(sop_oom);
    h.n = (uint32_t)(l->n <= SOP_OOM_MAX ? l->n : SOP_OOM_MAX);
    snprintf(h.boot_id, sizeof h.boot_id, "%s", key->boot_id);
    h.kills = key->kills;
    h.first_s = first;
    h.read_s = key->now_s;

    char tmp[64];
    unsigned char r[8] = {0};
    if (getentropy(r, sizeof r) < 0)
        return;
    snprintf(tmp, sizeof tmp, ".%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", MEMO_NAME, r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7]);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    size_t bytes = (size_t)h.n * sizeof(sop_oom);
    bool ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h &&
              (bytes == 0 || write(fd, l->items, bytes) == (ssize_t)bytes);
    ok = close(fd) == 0 && ok;
    if (!ok || renameat(dirfd, tmp, dirfd, MEMO_NAME) < 0)
        unlinkat(dirfd, tmp, 0);
}

void sop__oom_list_keep_since(sop_oom_list *l, double min_up_s)
{
    if (!(min_up_s > -INFINITY))
        return;
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (isfinite(l->items[i].uptime_s) && l->items[i].uptime_s < min_up_s)
            continue;
        if (k != i)
            l->items[k] = l->items[i];
        k++;
    }
    l->n = k;
}
