/* json.h — JSON text to and from the value tree. engine/core/json.c is the only file that includes
 * cJSON's header. */
#ifndef SOP_JSON_H
#define SOP_JSON_H

#include <stddef.h>

#include "value.h"

/* Parse; NULL on malformed input (err gets a short reason with the byte offset). The result
 * is owned by the caller. Nesting deeper than 64 levels is refused. */
sop_value *sop__json_parse(const char *text, size_t len, char *err, size_t errlen);
/* Serialize; malloc'd, owned by the caller. Control characters in strings are escaped as
 * \uXXXX by the JSON encoder. */
char *sop__json_print(const sop_value *v, int pretty);

#endif
