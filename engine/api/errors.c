/* errors.c — the small parts of the public API every other file leans on: error names, the
 * status of a remote read's -errno, an engine's last error (sop__fail), version, sop_free,
 * sop_escape (render/escape.c's and core/json.c's escapers for a caller's own text). */
#include "sop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "api_int.h"
#include "engine.h"
#include "escape.h"
#include "json.h"

const char *sop_strerror(int code)
{
    switch (code) {
    case SOP_OK:
        return "success";
#define SOP__ERR_CASE(name, value, msg)                                                            \
    case SOP_##name:                                                                               \
        return msg;
        SOP_ERRNO_MAP(SOP__ERR_CASE)
#undef SOP__ERR_CASE
    }
    return "unknown error";
}

/* The status of a remote read of a Python target (heap census, asyncio tasks): 0 or -errno. */
int sop__status_of_remote_read(int r)
{
    switch (r) {
    case 0:
        return SOP_OK;
    case -ENOEXEC:
        return SOP_ENOTPYTHON;
    case -ENOTSUP:
        return SOP_EPYVERSION;
    case -ESRCH:
    case -ENOENT:
        return SOP_ENOTARGET;
    case -EPERM:
    case -EACCES:
        return SOP_EACCES;
    case -ENOMEM:
        return SOP_ENOMEM;
    default:
        return SOP_EIO;
    }
}

const char *sop_version(void)
{
    return SOP_VERSION_STRING;
}

unsigned sop_version_hex(void)
{
    return SOP_VERSION_HEX;
}

void sop_free(void *p)
{
    free(p);
}

int sop_escape(const char *s, sop_escape_kind kind, char **out)
{
    if (!s || !out)
        return SOP_EINVAL;
    sop_sb b = {0};
    switch (kind) {
    case SOP_ESCAPE_TEXT:
        sop__esc_text(&b, s);
        break;
    case SOP_ESCAPE_JSON:
        sop__json_put_str(&b, s);
        break;
    case SOP_ESCAPE_MARKDOWN:
        sop__esc_md(&b, s);
        break;
    default:
        return SOP_EINVAL;
    }
    *out = sop__sb_take(&b);
    return *out ? 0 : SOP_ENOMEM;
}

int sop__fail(sop_engine *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, sizeof e->err, fmt, ap);
        va_end(ap);
    }
    return code;
}

int sop__fail_python_open(sop_engine *e, int pid, int rc, const char *why)
{
    if (rc == -ESRCH || rc == -ENOENT)
        return sop__fail(e, SOP_ENOTARGET, "pid %d: no such process", pid);
    if (rc == -EPERM || rc == -EACCES)
        return sop__fail(e, SOP_EACCES, "pid %d: memory not readable%s", pid, why);
    if (rc == -ENOTSUP)
        return sop__fail(e, SOP_EPYVERSION, "pid %d: CPython not readable by this sop%s", pid, why);
    return sop__fail(e, SOP_ENOTPYTHON, "pid %d: not a supported CPython process%s", pid, why);
}
