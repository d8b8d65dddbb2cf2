/* missing.h — the list of evidence a collection could not gather, with the reason.
 * "Errors are evidence too": probes add here and carry on. Depends on libc only. */
#ifndef SOP_MISSING_H
#define SOP_MISSING_H

#include <stddef.h>

typedef struct {
    char probe[32];
    char reason[224];
} sop_missing_item;

typedef struct {
    sop_missing_item *items;
    size_t n, cap;
} sop_missing;

/* Add {probe, reason}; the reason is printf-formatted. Silently drops on allocation failure
 * and skips an exact duplicate. */
void sop__missing_add(sop_missing *m, const char *probe, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sop__missing_free(sop_missing *m);

/* The text of errno value `err` for a reason or an error message: the C locale's wording, and
 * thread-safe on any libc (no shared buffer), unlike strerror() in POSIX. */
const char *sop__strerror(int err);

#endif
