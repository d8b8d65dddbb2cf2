/* fuzz_evidence.c — libFuzzer target: the evidence JSON loader (sop_evidence_from_json) on
 * arbitrary text, and for documents it accepts: serialize again, run the default rule pack,
 * render the report in every format. Depends on the public API (include/sop.h). */
#include "fuzz.h"
#include "sop.h"

static sop_engine *engine;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!engine && (sop_engine_new(&engine) != 0 || sop_load_rules_default(engine) != 0))
        abort();
    char *text = malloc(size ? size : 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    sop_evidence *ev = NULL;
    if (sop_evidence_from_json(engine, text, size, &ev) == 0) {
        char *js = NULL;
        if (sop_evidence_to_json(ev, 0, &js) == 0)
            sop_free(js);
        sop_report *r = NULL;
        if (sop_evaluate(engine, ev, &r) == 0) {
            for (int f = 0; f < 3; f++) {
                char *out = NULL;
                if (sop_report_render(r, (sop_format)f, f == 1 ? "zh" : "en", &out) == 0)
                    sop_free(out);
            }
            char *sum = NULL;
            if (sop_report_summary(r, "en", &sum) == 0)
                sop_free(sum);
            sop_report_free(r);
        }
        sop_evidence_free(ev);
    }
    free(text);
    return 0;
}
