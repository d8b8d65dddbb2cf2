/* test_evidence_reads.c — every evidence key C code reads outside the providers
 * (SOP_EVKEY / SOP_EVPATH, engine/core/evidence_reads.h: the report's target block, the HTML
 * task section, the watch's history, `sopctl heap`'s text, the evidence check) is a row or a
 * group of the schema (docs/evidence.md): a key misspelt or renamed fails here instead of
 * silently reading nothing. Depends on evidence_doc.c, t.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/evidence_doc.h"
#include "evidence_reads.h"
#include "t.h"

int main(void)
{
    static const char *paths[1024];
    size_t n = sop__evkey_paths(paths, 1024);
    CHECK(n >= 40 && n <= 1024);
    bool report = false, heap = false, tasks = false, watch = false;
    for (size_t i = 0; i < n && i < 1024; i++) {
        bool found = sop__evidence_known(paths[i]);
        if (!found)
            printf("not in the schema: %s\n", paths[i]);
        CHECK(found);
        report |= strcmp(paths[i], "host.oom_kills[].comm") == 0;
        heap |= strcmp(paths[i], "python.heap.growth_explained") == 0;
        tasks |= strcmp(paths[i], "python.tasks.convoys[].holder_chain") == 0;
        watch |= strcmp(paths[i], "proc.start_time_s") == 0;
    }
    CHECK(report && heap && tasks && watch); /* the section holds every file's reads */
    CHECK_EQ_S(sop__evkey_leaf("python.tasks.waits[].kind"), "kind");
    CHECK_EQ_S(sop__evkey_leaf("pid"), "pid");
    CHECK(sop__evidence_known("python.tasks"));
    CHECK(sop__evidence_known("threads"));
    CHECK(!sop__evidence_known("pyth"));
    CHECK(!sop__evidence_known("proc.rss_kB"));
    return t_done();
}
