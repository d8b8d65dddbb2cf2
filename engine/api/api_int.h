/* api_int.h — what the entry points of engine/api/ share: the rate bound, the engine's last
 * error, the record formats and the embedded rule pack. */
#ifndef SOP_API_INT_H
#define SOP_API_INT_H

#include <stdio.h>

#include "engine.h"
#include "rules.h"

/* The highest sampling rate any entry point accepts (sop_collect, sop_watch_new, sop_record;
 * sopctl --rate): a rate of inf or 1e300 would make a window that never ends. */
#define SOP_RATE_MAX_HZ 10000

/* Set the engine's last error (printf-style) and return `code`. e may be NULL. */
int sop__fail(sop_engine *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The status (SOP_*) of a remote read of a Python target that returned 0 or -errno: not Python
 * (ENOEXEC, ENOTSUP), no target (ESRCH, ENOENT), EACCES, ENOMEM, else EIO (engine/api/errors.c). */
int sop__status_of_remote_read(int r);
/* Fail (sop__fail) for a CPython target that could not be opened for sampling: rc the -errno of
 * the open, why ("" or ": reason") appended. Returns the SOP_* code set. */
int sop__fail_python_open(sop_engine *e, int pid, int rc, const char *why);

/* record.c: the output format a path's name asks for. */
sop_record_format sop__record_format_of(const char *path);
/* Render a report tree in fmt/lang through the format table (engine/api/format.c), without
 * evidence; malloc'd string or NULL (also for a format that renders no report). */
char *sop__report_render(const sop_value *report, sop_format fmt, const char *lang);

/* The embedded default pack: {name, source} pairs, "rules" first; {NULL, NULL} ends it. */
extern const sop_rules_module sop__embedded_modules[];

#endif
