/* evidence_reads.h — evidence keys read by C code outside the providers (the report's target
 * block, the HTML page's task section, the watch's history, `sopctl heap`'s text, the check
 * that a file is evidence). SOP_EVKEY("python.tasks.pending") is the key "pending", for the
 * lookup in the object at hand ("proc", a group's own key, names the group); the whole path,
 * as docs/evidence.md spells it, is kept in the
 * section sop_ev_reads, and test_evidence_reads checks every one against the schema: a key
 * misspelt or renamed fails a test instead of silently reading nothing. Depends on libc. */
#ifndef SOP_EVIDENCE_READS_H
#define SOP_EVIDENCE_READS_H

#include <stddef.h>

#define SOP_EVKEY(path)                                                                            \
    (__extension__({                                                                               \
        static const char *const sop__evkey_path __attribute__((used, section("sop_ev_reads"))) =  \
            path;                                                                                  \
        sop__evkey_leaf(path);                                                                     \
    }))

/* The same, the whole path: for sop__v_path / sop__v_fold from the evidence's root. */
#define SOP_EVPATH(path)                                                                           \
    (__extension__({                                                                               \
        static const char *const sop__evkey_path __attribute__((used, section("sop_ev_reads"))) =  \
            path;                                                                                  \
        (const char *)(path);                                                                      \
    }))

/* The last segment of a path: the key within its object. */
const char *sop__evkey_leaf(const char *path);
/* Every path SOP_EVKEY names in the linked program, at most cap into out; returns how many. */
size_t sop__evkey_paths(const char **out, size_t cap);

#endif
