/* fuzz_merge.c — libFuzzer target: merge's reader (sop_merge_add_json: JSON lines or
 * concatenated reports, parts that are not reports, the bounds) on arbitrary text, twice into
 * one merge (the bounds count across calls), then the job-level report in every format.
 * Depends on the public API (include/sop.h). */
#include "fuzz.h"
#include "sop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sop_merge *m = NULL;
    if (sop_merge_new(&m) != 0)
        abort();
    size_t half = size / 2;
    sop_merge_add_json(m, "a", (const char *)data, half);
    sop_merge_add_json(m, "b", (const char *)data + half, size - half);
    for (int f = 0; f < 3; f++) {
        char *out = NULL;
        int problem = 0;
        if (sop_merge_render(m, (sop_format)f, f == 1 ? "zh" : "en", &out, &problem) == 0)
            sop_free(out);
    }
    sop_merge_free(m);
    return 0;
}
