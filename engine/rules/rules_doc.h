/* rules_doc.h — generated documentation of a loaded rule pack (engine/rules/rules_doc.c). */
#ifndef SOP_RULES_DOC_H
#define SOP_RULES_DOC_H

#include <stddef.h>

#include "value.h"

/* docs/rules.md as Markdown from `desc` (sop__rules_describe) and the source of the pack's main
 * file (its thresholds' comments; may be NULL). pack_name is shown in the header. Returns a
 * malloc'd string or NULL when out of memory. */
char *sop__rules_doc_md(const sop_value *desc, const char *pack_name, const char *src, size_t len);

#endif
