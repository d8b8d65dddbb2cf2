/* proc_io.c — parse /proc/PID/io: bytes and syscalls through read/write (rchar, syscr, ...)
 * and bytes that reached the block layer (read_bytes, ...). Depends on proc_kv.c, procfs.c. */
#include <errno.h>

#include "proc.h"
#include "proc_kv.h"

int sop__parse_io(const char *text, sop_io *out)
{
    out->rchar = out->wchar = out->syscr = out->syscw = SOP_NA;
    out->read_bytes = out->write_bytes = out->cancelled_write_bytes = SOP_NA;
    if (!text)
        return -EINVAL;
    const sop_kv_slot slots[] = {
        {"rchar", &out->rchar},
        {"wchar", &out->wchar},
        {"syscr", &out->syscr},
        {"syscw", &out->syscw},
        {"read_bytes", &out->read_bytes},
        {"write_bytes", &out->write_bytes},
        {"cancelled_write_bytes", &out->cancelled_write_bytes},
    };
    return sop__kv_scan(text, slots, sizeof slots / sizeof slots[0]) ? 0 : -ENODATA;
}
