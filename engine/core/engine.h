/* engine.h — the insides of the public handles (sop_engine, sop_evidence, sop_report) and the
 * internal steps the API is made of: collect (engine/collect/collect.c) and render
 * (engine/render/report.c). */
#ifndef SOP_ENGINE_H
#define SOP_ENGINE_H

#include <stdbool.h>

#include "rules.h"
#include "sop.h"
#include "value.h"

/* The highest sampling rate any entry point accepts (sop_collect, sop_watch_new, sop_record;
 * sopctl --rate): a rate of inf or 1e300 would make a window that never ends. */
#define SOP_RATE_MAX_HZ 10000

/* A rule source kept by the engine so that a site file can be applied over the pack again. */
typedef struct {
    char *name; /* chunk name shown in errors */
    char *src;
    size_t len;
    char *dir; /* where its `require` looks; NULL for none */
} sop_source;

struct sop_engine {
    sop_rules *rules;
    bool loaded;
    sop_source pack; /* the pack last loaded (src NULL before) */
    sop_source site; /* the site file in force (src NULL when none) */
    char err[2048];
};

struct sop_evidence {
    sop_value *tree;     /* the `ev` object of docs/evidence.md */
    char *pictures_html; /* SOP_COLLECT_PICTURES: flame graph + timeline, inline SVG; or NULL */
};

struct sop_report {
    sop_value *tree; /* the report object of docs/contract.md, texts still bilingual */
    bool problem;    /* a warn or high finding */
};

/* Set the engine's last error (printf-style) and return `code`. e may be NULL. */
int sop__fail(sop_engine *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The status (SOP_*) of a remote read of a Python target that returned 0 or -errno: not Python
 * (ENOEXEC, ENOTSUP), no target (ESRCH, ENOENT), EACCES, ENOMEM, else EIO (engine/api/errors.c). */
int sop__status_of_remote_read(int r);
/* Fail (sop__fail) for a CPython target that could not be opened for sampling: rc the -errno of
 * the open, why ("" or ": reason") appended. Returns the SOP_* code set. */
int sop__fail_python_open(sop_engine *e, int pid, int rc, const char *why);

/* Gather the evidence tree for pid per opts. Returns 0, SOP_ENOTARGET, SOP_EACCES, SOP_ENOMEM;
 * err gets the detail. */
/* pictures (may be NULL): with SOP_COLLECT_PICTURES, the flame graph and timeline of the
 * window as inline SVG (malloc'd), else NULL. */
int sop__collect(int pid, const sop_collect_opts *opts, sop_value **out, char **pictures, char *err,
                 size_t errlen);

/* Build the report tree from the rules' verdicts and the evidence (takes ownership of verdicts). */
sop_value *sop__report_build(sop_value *verdicts, const sop_value *ev, double rules_ms,
                             bool *problem);
/* HTML pages (engine/render/html.c): the head with the page's style, the report (verdict, table,
 * lists; readable without script), the end. Everything written is escaped. */
#include <stdio.h>
void sop__html_begin(FILE *f, const char *title);
void sop__html_report(FILE *f, const sop_value *report, const char *lang);
void sop__html_end(FILE *f);
/* record.c: the output format a path's name asks for. */
sop_record_format sop__record_format_of(const char *path);
/* The target's pictures, inline for an HTML page: what bit 1 the flame graph, bit 2 the
 * timeline (needs sop__sampler_keep_timeline) with a GPU lane when `gpu` has readings (may be
 * NULL); flags SOP_RECORD_IDLE. 0 or -errno. */
struct sop_sampler;
struct sop_timeline_gpu;
int sop__record_pictures(const struct sop_sampler *s, int pid, unsigned what, unsigned flags,
                         const struct sop_timeline_gpu *gpu, FILE *f);
/* The terminal layout (engine/render/report_term.c); malloc'd string or NULL. */
char *sop__report_render_term(const sop_value *report, const char *lang, int width, bool color,
                              bool all);

/* Render a report tree in fmt/lang through the format table (engine/api/format.c), without
 * evidence; malloc'd string or NULL (also for a format that renders no report). */
char *sop__report_render(const sop_value *report, sop_format fmt, const char *lang);

/* Render a report tree (and the evidence tree, may be NULL) as OpenMetrics families, without
 * the closing "# EOF" (engine/render/openmetrics.c); malloc'd string or NULL. */
char *sop__openmetrics_render(const sop_value *report, const sop_value *ev);
/* Every evidence path the OpenMetrics writer reads (docs/evidence.md's spelling), at most cap
 * into out; returns how many there are (test_openmetrics checks them against the schema). */
size_t sop__openmetrics_reads(const char **out, size_t cap);

/* The embedded default pack: {name, source} pairs, "rules" first; {NULL, NULL} ends it. */
extern const sop_rules_module sop__embedded_modules[];

#endif
