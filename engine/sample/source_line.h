/* source_line.h — one line of a target's Python source file, read through /proc/PID/root, to
 * show what a hot frame executes (engine/sample/source_line.c). Depends on libc. */
#ifndef SOP_SOURCE_LINE_H
#define SOP_SOURCE_LINE_H

#include <stddef.h>

/* Line `line` (1-based) of `path` as process `pid` sees it (proc_root/PID/root/path), stripped
 * of surrounding blanks, control characters replaced, cut to cap - 1 bytes. Only absolute paths
 * of regular `.py` files up to max_bytes are read. Returns 0, or a negative errno (-EINVAL for
 * a path or line not eligible, -ENOENT past the end of the file). */
int sop__source_line(const char *proc_root, int pid, const char *path, int line, size_t max_bytes,
                     char *out, size_t cap);

#endif
