/* sop.c — the small parts of the public API every other file leans on: error names, version,
 * sop_free. Depends on libc only. */
#include "sop.h"

#include <stdlib.h>

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
