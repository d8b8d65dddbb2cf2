/* watch_log.c — `sopctl watch`'s log line: a UTC time stamp, "sopctl watch:", the message,
 * escaped (sop_escape), written to stderr in one write. Used by cmd_watch.c and watch_hooks.c.
 * Depends on watch.h. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "watch.h"

void cli_watch_log(const char *fmt, ...)
{
    char line[2048], stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* a line may quote a container's name, a target's error or the user's paths: escaped as
     * every output of sop is, so no control, bidi override or broken byte reaches a terminal
     * and a line stays one line */
    char *esc = NULL;
    fprintf(stderr, "%s sopctl watch: %s\n", stamp,
            sop_escape(line, SOP_ESCAPE_TEXT, &esc) == 0 ? esc : "(out of memory)"); /* one write */
    sop_free(esc);
}
