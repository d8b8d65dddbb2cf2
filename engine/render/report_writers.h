/* report_writers.h — the report in each format the format table (engine/api/format.c) names: the
 * report tree (texts still bilingual), the evidence it was made from (may be NULL), lang "en" or
 * "zh"; a malloc'd string or NULL. Markdown, text and JSON in report.c, the HTML page in html.c. */
#ifndef SOP_REPORT_WRITERS_H
#define SOP_REPORT_WRITERS_H

#include <stdbool.h>

#include "sop.h"
#include "value.h"

char *sop__report_md(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_json(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_text(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_html(const sop_value *report, const sop_evidence *ev, const char *lang);

/* The report's target block as every writer shows it (read once, by sop__report_target): the
 * pid, comm, command line and Python version (NULL when absent), whether it had exited, its
 * container's parts and the container line "container NAME (RUNTIME ID12) — pod NAMESPACE/POD,
 * container C" (malloc'd, plain text the writer escapes; NULL when not in a container). */
typedef struct {
    double pid;
    bool has_pid;
    const char *comm, *cmdline, *python;
    bool exited;
    /* target.container's parts (NULL when absent): the runtime's name and id, the runtime, the
     * pod, its namespace and the pod spec's container name */
    bool in_container;
    const char *ct_name, *ct_id, *ct_runtime, *pod, *ns, *ct_container;
    char *where;
} sop_report_target;

void sop__report_target(const sop_value *report, sop_report_target *out);
void sop__report_target_free(sop_report_target *t);

#endif
