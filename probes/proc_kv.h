/* proc_kv.h — one table-driven pass over "Key:   value [kB]" text (status, smaps_rollup, io),
 * shared by the parsers of those files. A last line without '\n' is taken as cut off and
 * ignored, so a truncated read never yields a truncated number. Depends on procfs.h. */
#ifndef SOP_PROC_KV_H
#define SOP_PROC_KV_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key;
    int64_t *dst; /* set to the parsed number (SOP_NA stays when malformed) */
} sop_kv_slot;

/* Fill every slot whose key appears; returns how many slots were found. */
int sop__kv_scan(const char *text, const sop_kv_slot *slots, size_t n);

/* The value text of `key` (after ':' and blanks) up to the end of its line; NULL if the key is
 * absent or its line is cut off. *len gets the length. */
const char *sop__kv_str(const char *text, const char *key, size_t *len);

#endif
