/* escape.h — one escaper per output format, for every string that comes from a target or an
 * evidence file (names, argv, versions, paths, rule text): plain text, Markdown, JSON,
 * collapsed stacks and SVG/XML. Each keeps the output in its format's syntax (no control
 * character, no markup, always valid UTF-8). tests/unit/test_escape.c runs one table of hostile
 * strings through every format and every place. Depends on engine/core/strbuf.c. */
#ifndef SOP_ESCAPE_H
#define SOP_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

#include "strbuf.h"
#include "utf8.h"

/* Terminal text: C0 controls and DEL as \xNN, C1 controls as \u00NN, a byte that is not valid
 * UTF-8 as \xNN. Everything else verbatim (so CR, LF, ESC, BEL never reach a terminal). */
void sop__esc_text(sop_sb *b, const char *s);
/* Markdown (CommonMark + GFM tables) inline text: as text, and ASCII punctuation with a meaning
 * in Markdown or HTML (\ ` * _ [ ] < > | ! & ~ #) behind a backslash, so a name holding
 * [a](u), <img ...>, a backtick or a pipe stays literal text in a cell or a line. */
void sop__esc_md(sop_sb *b, const char *s);
/* A Markdown code span holding s literally: the fence is one backtick more than the longest
 * run in s; controls and invalid UTF-8 escaped as text; '|' as "\|" (GFM cells). */
void sop__esc_md_code(sop_sb *b, const char *s);
/* A collapsed-stack line's frame text (flamegraph.pl format): as text, so no newline, ESC or
 * invalid byte splits or colours a line. */
void sop__esc_collapsed(sop_sb *b, const char *s);
/* XML character data and attribute values: & < > " ' as entities; controls (C0, DEL, C1) and
 * invalid UTF-8 as '?'; at most max_chars characters, then "..". */
void sop__esc_xml(FILE *f, const char *s, size_t len, size_t max_chars);
/* HTML text or attribute value (html.c): markup escaped, newlines kept, other controls shown
 * as \xNN and C1 controls as \uNNNN, invalid UTF-8 as U+FFFD. */
void sop__esc_html(FILE *f, const char *s);
/* A JSON text with every invalid UTF-8 byte replaced by \ufffd and DEL/C1 controls as \u
 * escapes (cJSON leaves both raw): the result is valid JSON text. New malloc'd string or NULL. */
char *sop__esc_json_text(const char *json);

/* Kept from strbuf.h (the string buffer stays below the escapers): */
/* Append s with C0 controls, DEL and C1 controls (U+0080..U+009F) written as \xNN / \u00NN,
 * and, when md_cell, '|' as "\|" so a Markdown table cell stays one cell. */
void sop__sb_put_escaped(sop_sb *b, const char *s, bool md_cell);
/* Rewrite a JSON text so DEL and C1 controls inside it appear as \u escapes (cJSON leaves them
 * raw). Returns a new malloc'd string or NULL; json is not freed. */
char *sop__json_escape_controls(const char *json);

#endif
