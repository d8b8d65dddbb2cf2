/* formats.c — --format and -o FILE for the commands that render reports or merges: names,
 * messages and extensions all come from libsop's format table (sop_format_at). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *cli_format_names(unsigned takes, const char *first, const char *sep, const char *last,
                             char *buf, size_t len)
{
    const char *names[16];
    size_t n = 0;
    if (first)
        names[n++] = first;
    for (size_t i = 0; n < 16; i++) {
        const sop_format_info *f = sop_format_at(i);
        if (!f)
            break;
        if ((f->flags & takes) == takes)
            names[n++] = f->name;
    }
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k < len; i++) {
        const char *join = i == 0 ? "" : i + 1 == n ? last : sep;
        int w = snprintf(buf + k, len - k, "%s%s", join, names[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
    return buf;
}

int cli_parse_format(const char *s, unsigned takes, const char *first, sop_format *fmt)
{
    const sop_format_info *f = sop_format_find(s);
    if (f && (f->flags & takes) == takes) {
        *fmt = f->format;
        return 0;
    }
    char names[160];
    fprintf(stderr, "sopctl: --format: '%s' is not %s\n", s,
            cli_format_names(takes, first, ", ", " or ", names, sizeof names));
    return -1;
}

int cli_format_of_path(const char *path, unsigned takes, sop_format *fmt)
{
    size_t n = strlen(path);
    for (size_t i = 0;; i++) {
        const sop_format_info *f = sop_format_at(i);
        if (!f)
            return -1;
        size_t e = strlen(f->ext);
        if ((f->flags & takes) == takes && n > e && strcmp(path + n - e, f->ext) == 0) {
            *fmt = f->format;
            return 0;
        }
    }
}
