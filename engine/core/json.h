/* json.h — JSON text to and from the value tree. engine/core/json.c is the only file that includes
 * cJSON's header. */
#ifndef SOP_JSON_H
#define SOP_JSON_H

#include <stddef.h>

#include "strbuf.h"
#include "value.h"

/* Parse; NULL on malformed input (err gets a short reason with the byte offset). The result
 * is owned by the caller. Nesting deeper than 64 levels is refused. */
sop_value *sop__json_parse(const char *text, size_t len, char *err, size_t errlen);
/* Serialize; malloc'd, owned by the caller. Control characters in strings are escaped as
 * \uXXXX by the JSON encoder. */
char *sop__json_print(const sop_value *v, int pretty);
/* The same into b, as a value nested `depth` levels deep (its indentation when pretty): a large
 * document written piece by piece (a streaming sop_sb) prints exactly as one tree would. */
void sop__json_put(sop_sb *b, const sop_value *v, int depth, int pretty);
/* An object member's key at `depth` (its tabs, the quoted key, the separator): the value follows
 * with sop__json_put(b, v, depth + 1, pretty). */
void sop__json_put_key(sop_sb *b, const char *key, int depth, int pretty);
/* One string or number exactly as a value holding it prints: for documents written straight
 * from their data, with no tree in between (speedscope.c). */
void sop__json_put_str(sop_sb *b, const char *s);
void sop__json_put_num(sop_sb *b, double d);

#endif
