/* format.h — the format table's writers (engine/api/format.c): one row per sop_format with its
 * name, extension, MIME type and the functions that render a report or a merge in it. */
#ifndef SOP_FORMAT_H
#define SOP_FORMAT_H

#include "sop.h"
#include "value.h"

/* A report writer (report_writers.h): the report tree (texts still bilingual), the evidence it
 * was made from (may be NULL), lang "en" or "zh". A merge writer (merge.h): the job tree
 * sop__merge_analyse built. Both return a malloc'd string or NULL. */
typedef char *(*sop_report_writer)(const sop_value *report, const sop_evidence *ev,
                                   const char *lang);
typedef char *(*sop_merge_writer)(const sop_value *job, const char *lang);

typedef struct {
    sop_format_info info;
    sop_report_writer report; /* NULL: not a report format */
    sop_merge_writer merge;   /* NULL: not a merge format */
} sop_format_row;

/* The row of fmt, or NULL for a value outside the table. */
const sop_format_row *sop__format_row(sop_format fmt);

#endif
