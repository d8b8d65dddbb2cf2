/* promtext.c — OpenMetrics text (engine/render/openmetrics.c) rewritten as the Prometheus text
 * format 0.0.4: what `curl …/metrics | promtool check metrics` and older scrapers read. The two
 * differ in the metadata of counters (OpenMetrics names the family without `_total`, the text
 * format names it as its samples), in `# UNIT` and `# EOF` lines (OpenMetrics only) and in the type
 * `unknown` (`untyped`). Samples and label escaping are the same and pass through unchanged
 * (libsop writes no sample timestamps and no `_created` series). Depends on libc. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "promtext.h"

int cli_accepts_openmetrics(const char *accept)
{
    if (!accept)
        return 0;
    /* Any media range naming it, with a quality above zero; Prometheus sends
     * "application/openmetrics-text;version=1.0.0,...;q=0.5,...". */
    const char *p = accept;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *end = p + n;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        static const char want[] = "application/openmetrics-text";
        size_t wl = sizeof want - 1;
        if ((size_t)(end - p) >= wl && strncasecmp(p, want, wl) == 0 &&
            (p + wl == end || p[wl] == ';' || p[wl] == ' ' || p[wl] == '\t')) {
            const char *q = p;
            bool zero = false;
            while (q < end) { /* ";q=0" (or 0.0, 0.00...) declines it */
                q = memchr(q, ';', (size_t)(end - q));
                if (!q)
                    break;
                q++;
                while (q < end && *q == ' ')
                    q++;
                if (end - q >= 2 && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                    double v = strtod(q + 2, NULL);
                    zero = v <= 0;
                }
            }
            if (!zero)
                return 1;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* Append n bytes to (*buf, *len) of capacity *cap; false when out of memory. */
static bool put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t want = *cap ? *cap : 4096;
        while (*len + n + 1 > want)
            want *= 2;
        char *nb = realloc(*buf, want);
        if (!nb)
            return false;
        *buf = nb;
        *cap = want;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

/* The name of a "# TYPE name ..." / "# HELP name ..." line at s (after the keyword and its
 * space): its length. */
static size_t name_len(const char *s, const char *eol)
{
    size_t n = 0;
    while (s + n < eol && s[n] != ' ')
        n++;
    return n;
}

char *cli_openmetrics_to_text(const char *om)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    /* the current counter family's name, to rename its HELP (libsop writes TYPE first) */
    char counter[256] = "";
    bool ok = put(&buf, &len, &cap, "", 0);
    for (const char *line = om; ok && line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        size_t n = (size_t)(eol - line);
        if (n >= 7 && strncmp(line, "# TYPE ", 7) == 0) {
            const char *name = line + 7;
            size_t nl = name_len(name, eol);
            const char *type = name + nl + (name + nl < eol);
            size_t tl = (size_t)(eol - type);
            if (tl == 7 && strncmp(type, "counter", 7) == 0 && nl < sizeof counter) {
                memcpy(counter, name, nl);
                counter[nl] = '\0';
                ok = put(&buf, &len, &cap, line, 7 + nl) && put(&buf, &len, &cap, "_total", 6) &&
                     put(&buf, &len, &cap, " counter\n", 9);
            } else {
                counter[0] = '\0';
                if (tl == 7 && strncmp(type, "unknown", 7) == 0)
                    ok = put(&buf, &len, &cap, line, 7 + nl) &&
                         put(&buf, &len, &cap, " untyped\n", 9);
                else
                    ok = put(&buf, &len, &cap, line, n) && put(&buf, &len, &cap, "\n", 1);
            }
        } else if (n >= 7 && strncmp(line, "# HELP ", 7) == 0) {
            const char *name = line + 7;
            size_t nl = name_len(name, eol);
            bool is_counter =
                counter[0] && nl == strlen(counter) && strncmp(name, counter, nl) == 0;
            ok = put(&buf, &len, &cap, line, 7 + nl) &&
                 (!is_counter || put(&buf, &len, &cap, "_total", 6)) &&
                 put(&buf, &len, &cap, name + nl, (size_t)(eol - name - nl)) &&
                 put(&buf, &len, &cap, "\n", 1);
        } else if ((n >= 7 && strncmp(line, "# UNIT ", 7) == 0) ||
                   (n == 5 && strncmp(line, "# EOF", 5) == 0)) {
            /* OpenMetrics only */
        } else if (n > 0) {
            ok = put(&buf, &len, &cap, line, n) && put(&buf, &len, &cap, "\n", 1);
        }
        line = *eol ? eol + 1 : eol;
    }
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}
