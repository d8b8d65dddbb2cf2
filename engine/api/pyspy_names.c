/* pyspy_names.c — py-spy's short file names: a frame's file shown from its top package down
 * ("torch/nn/modules/module.py"), found as py-spy finds it, by the __init__.py files of the
 * directories above it, seen through /proc/PID/root (a target in a container). Depends on
 * libc and pyspy_formats.h. */
#include "pyspy_formats.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void sop__pyspy_short_file(const char *proc_root, int pid, const char *file, char *out, size_t cap)
{
    if (!cap)
        return;
    snprintf(out, cap, "%s", file ? file : "");
    if (!file || file[0] != '/')
        return;
    /* Walk up from the file's directory while the directory holds an __init__.py: the first
     * one that does not is the prefix left out. */
    size_t cut = strlen(file);
    while (cut > 0 && file[cut - 1] != '/')
        cut--;
    /* file[0..cut-1) is the directory ("" for a file in /) */
    while (cut > 1) {
        char path[4352];
        int n = snprintf(path, sizeof path, "%s/%d/root%.*s/__init__.py", proc_root, pid,
                         (int)(cut - 1), file);
        if (n < 0 || (size_t)n >= sizeof path || faccessat(AT_FDCWD, path, F_OK, 0) != 0)
            break;
        cut--; /* drop the '/' and walk to the parent's */
        while (cut > 0 && file[cut - 1] != '/')
            cut--;
    }
    snprintf(out, cap, "%s", file + cut);
}
