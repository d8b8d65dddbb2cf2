/* watch_log.c — `sopctl watch`'s log line: a UTC time stamp, "sopctl watch:", the message,
 * written to stderr in one write. Used by cmd_watch.c and watch_hooks.c. Depends on watch.h. */
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
    fprintf(stderr, "%s sopctl watch: %s\n", stamp, line); /* one write per line */
}
