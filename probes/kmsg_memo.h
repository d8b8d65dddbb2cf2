/* kmsg_memo.h — the kernel log's OOM records remembered between reads, so that a snapshot does
 * not have the kernel format the whole ring again (syslog(2) READ_ALL: ~2 ms per 128 KiB here,
 * on every snapshot once the host has had a single OOM kill, and more on a larger ring).
 *
 * Why it is exact: the host's kill counter (/proc/vmstat oom_kill) only grows, and each kill's
 * lines reach the ring microseconds after it is counted. A parse of the whole ring that began
 * SOP_KMSG_MEMO_SETTLE_S or more after the counter was seen at N holds every OOM record the ring
 * will hold while the counter stays N (records the ring has since overwritten or a `dmesg -C`
 * cleared are still remembered, and still true). A parse made sooner is kept but not used.
 *
 * Where: the file kmsg-oom in the state directory $SOP_STATE_DIR; unset or empty: remember
 * nothing (the library writes no file unless its host asks; sopctl run as root sets /run/sop
 * when the variable is unset, cli/sopctl.c). The directory (created 0700)
 * and the file (0600, written to a temporary and renamed) must be owned by the caller and not
 * writable by others, and no link is followed; anything else is ignored, never trusted.
 * Depends on libc, kmsg.h. */
#ifndef SOP_KMSG_MEMO_H
#define SOP_KMSG_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "kmsg.h"

#define SOP_KMSG_MEMO_SETTLE_S 5.0

/* This boot's identity (/proc/sys/kernel/random/boot_id) and the seconds since boot on
 * CLOCK_BOOTTIME (one clock for every process of the boot). */
typedef struct {
    char boot_id[40];
    int64_t kills; /* /proc/vmstat oom_kill: the key */
    double now_s;  /* CLOCK_BOOTTIME when the ring's read began (or the memo is asked) */
} sop_kmsg_key;

/* The state directory, opened (O_DIRECTORY|O_NOFOLLOW; the last component created 0700 when
 * missing) and checked: a descriptor, or -1 when none is set, it is refused, or unusable. */
int sop__state_dir_open(void);
/* Fill key for kills (false when the boot id or the clock cannot be read). */
bool sop__kmsg_key_now(sop_kmsg_key *key, int64_t kills);

/* The remembered records of this boot and kill count, settled, those stamped at or after
 * min_up_s, into out (times from btime, as sop__oom_list_init): true when used; false leaves
 * out empty (sop__oom_list_init). */
bool sop__kmsg_memo_get(int dirfd, const sop_kmsg_key *key, double min_up_s, double btime,
                        sop_oom_list *out);
/* Remember l, a parse of the whole ring (no age filter, nothing lost or cut) that began at
 * key->now_s. Best effort: a failure leaves the old memo or none. */
void sop__kmsg_memo_put(int dirfd, const sop_kmsg_key *key, const sop_oom_list *l);
/* Keep the records of l stamped at or after min_up_s (the age filter applied afterwards). */
void sop__oom_list_keep_since(sop_oom_list *l, double min_up_s);

#endif
