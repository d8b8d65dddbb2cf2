/* format.c — the format table: every output format's name, extension, MIME type and writers in
 * one row, read by the API (sop_report_render, sop_merge_render, sop_diagnose), the CLI's
 * --format and the Python binding (through sop_format_at / sop_format_find). */
#include <string.h>

#include "api_int.h"
#include "engine.h"
#include "format.h"
#include "merge.h"
#include "report_writers.h"

/* In sop_format order: the row of fmt is ROWS[fmt]. */
static const sop_format_row ROWS[] = {
    {{SOP_FORMAT_MD, "md", ".md", "text/markdown; charset=utf-8",
      SOP_FORMAT_REPORT | SOP_FORMAT_MERGE},
     sop__report_md,
     sop__merge_md},
    {{SOP_FORMAT_JSON, "json", ".json", "application/json", SOP_FORMAT_REPORT | SOP_FORMAT_MERGE},
     sop__report_json,
     sop__merge_json},
    {{SOP_FORMAT_TEXT, "text", ".txt", "text/plain; charset=utf-8",
      SOP_FORMAT_REPORT | SOP_FORMAT_MERGE},
     sop__report_text,
     sop__merge_text},
    {{SOP_FORMAT_HTML, "html", ".html", "text/html; charset=utf-8",
      SOP_FORMAT_REPORT | SOP_FORMAT_PICTURES},
     sop__report_html,
     NULL},
};
#define NROWS (sizeof ROWS / sizeof ROWS[0])

const sop_format_row *sop__format_row(sop_format fmt)
{
    size_t i = (size_t)fmt;
    return i < NROWS && ROWS[i].info.format == fmt ? &ROWS[i] : NULL;
}

const sop_format_info *sop_format_at(size_t i)
{
    return i < NROWS ? &ROWS[i].info : NULL;
}

const sop_format_info *sop_format_find(const char *name)
{
    for (size_t i = 0; name && i < NROWS; i++)
        if (strcmp(ROWS[i].info.name, name) == 0)
            return &ROWS[i].info;
    return NULL;
}

char *sop__report_render(const sop_value *report, sop_format fmt, const char *lang)
{
    const sop_format_row *row = sop__format_row(fmt);
    return row && row->report ? row->report(report, NULL, lang) : NULL;
}
