/* render.h — the report's writers as the API calls them: the report tree built from the
 * rules' verdicts (report.c), the terminal layout (report_term.c), the HTML page (html.c) and
 * the OpenMetrics families (openmetrics.c). */
#ifndef SOP_RENDER_H
#define SOP_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "value.h"

/* Build the report tree from the rules' verdicts and the evidence (takes ownership of verdicts). */
sop_value *sop__report_build(sop_value *verdicts, const sop_value *ev, double rules_ms,
                             bool *problem);
/* HTML pages (engine/render/html.c): the head with the page's style, the report (verdict, table,
 * lists; readable without script), the end. Everything written is escaped. */
void sop__html_begin(FILE *f, const char *title);
void sop__html_report(FILE *f, const sop_value *report, const char *lang);
void sop__html_end(FILE *f);
/* The terminal layout (engine/render/report_term.c); malloc'd string or NULL. */
char *sop__report_render_term(const sop_value *report, const char *lang, int width, bool color,
                              bool all);
/* Render a report tree (and the evidence tree, may be NULL) as OpenMetrics families, without
 * the closing "# EOF" (engine/render/openmetrics.c); malloc'd string or NULL. */
char *sop__openmetrics_render(const sop_value *report, const sop_value *ev);
/* Every evidence path the OpenMetrics writer reads (docs/evidence.md's spelling), at most cap
 * into out; returns how many there are (test_openmetrics checks them against the schema). */
size_t sop__openmetrics_reads(const char **out, size_t cap);
/* The target's pictures, inline for an HTML page (pictures.c): what bit 1 the flame graph, bit
 * 2 the timeline (needs sop__sampler_keep_timeline) with a GPU lane when `gpu` has readings
 * (may be NULL); flags SOP_RECORD_IDLE. 0 or -errno. */
struct sop_sampler;
struct sop_timeline_gpu;
int sop__record_pictures(const struct sop_sampler *s, int pid, unsigned what, unsigned flags,
                         const struct sop_timeline_gpu *gpu, FILE *f);

#endif
