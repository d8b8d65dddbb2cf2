/* report_writers.h — the report in each format the format table (engine/api/format.c) names: the
 * report tree (texts still bilingual), the evidence it was made from (may be NULL), lang "en" or
 * "zh"; a malloc'd string or NULL. Markdown, text and JSON in report.c, the HTML page in html.c. */
#ifndef SOP_REPORT_WRITERS_H
#define SOP_REPORT_WRITERS_H

#include "sop.h"
#include "value.h"

char *sop__report_md(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_json(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_text(const sop_value *report, const sop_evidence *ev, const char *lang);
char *sop__report_html(const sop_value *report, const sop_evidence *ev, const char *lang);

/* The report's target.container as one line of plain text (the caller escapes it): "container
 * NAME (RUNTIME ID12) — pod NAMESPACE/POD, container C"; NULL when not in a container.
 * Every report writer names the container with it (report.c). */
char *sop__report_container_line(const sop_value *target);

#endif
