/* proc_kv.c — one table-driven pass over "Key: value" /proc text (status, smaps_rollup, io).
 * Depends on procfs.c for the number parsing. */
#include "proc_kv.h"

#include <string.h>

#include "procfs.h"

int sop__kv_scan(const char *text, const sop_kv_slot *slots, size_t n)
{
    int found = 0;
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* cut-off last line */
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            size_t klen = (size_t)(colon - line);
            for (size_t i = 0; i < n; i++) {
                if (slots[i].key[0] == line[0] && strncmp(slots[i].key, line, klen) == 0 &&
                    slots[i].key[klen] == '\0') {
                    const char *p = colon + 1;
                    *slots[i].dst = sop__parse_i64(&p);
                    found++;
                    break;
                }
            }
        }
        line = eol + 1;
    }
    return found;
}

const char *sop__kv_str(const char *text, const char *key, size_t *len)
{
    size_t klen = strlen(key);
    const char *line = text;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            return NULL;
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            *len = (size_t)(eol - v);
            return v;
        }
        line = eol + 1;
    }
    return NULL;
}
