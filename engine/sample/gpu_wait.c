/* gpu_wait.c — the pure parts of telling a GPU wait from native compute (gpu_wait.h): the text
 * of a line that waits for the device, the syscalls such a wait sleeps in, the GPU device files.
 * Depends on libc. */
#include "gpu_wait.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "syscall_nr.h"

/* The code of a line: up to a '#' outside a string, with each string literal's contents
 * blanked ('_') except a literal that says cpu (kept for `.to("cpu")`). Returns its length. */
static size_t code_of(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; s[i] && n + 1 < cap; i++) {
        char c = s[i];
        if (c == '#')
            break;
        if (c != '\'' && c != '"') {
            out[n++] = c;
            continue;
        }
        size_t j = i + 1;
        while (s[j] && s[j] != c)
            j += s[j] == '\\' && s[j + 1] ? 2 : 1;
        bool cpu = j - i - 1 == 3 && memcmp(s + i + 1, "cpu", 3) == 0;
        for (size_t k = i; k <= j && s[k] && n + 1 < cap; k++)
            out[n++] = (k == i || k == j || cpu) ? s[k] : '_';
        if (!s[j])
            break;
        i = j;
    }
    out[n] = '\0';
    return n;
}

/* needle occurs in s[0..n) */
static bool has(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(s + i, needle, m) == 0)
            return true;
    return false;
}

/* `.to(` followed (blanks aside) by a "cpu" string or device="cpu" / torch.device("cpu"). */
static bool to_cpu(const char *s, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++) {
        if (memcmp(s + i, ".to(", 4) != 0)
            continue;
        size_t j = i + 4, depth = 1;
        for (; j < n && depth; j++) {
            if (s[j] == '(')
                depth++;
            else if (s[j] == ')')
                depth--;
            if (depth && j + 5 <= n &&
                (memcmp(s + j, "\"cpu\"", 5) == 0 || memcmp(s + j, "'cpu'", 5) == 0))
                return true;
        }
    }
    return false;
}

bool sop__gpu_sync_line(const char *text)
{
    if (!text)
        return false;
    char code[512];
    size_t n = code_of(text, code, sizeof code);
    text = code;
    static const char *const calls[] = {".item()", ".cpu()", ".tolist()", ".numpy()",
                                        "synchronize("};
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
        if (has(text, n, calls[k]))
            return true;
    return to_cpu(text, n);
}

bool sop__gpu_device_path(const char *path)
{
    if (!path)
        return false;
    if (strncmp(path, "/dev/nvidia", 11) == 0) {
        const char *r = path + 11;
        if (strcmp(r, "ctl") == 0 || strcmp(r, "-uvm") == 0)
            return true;
        if (!*r)
            return false;
        for (; *r; r++)
            if (!isdigit((unsigned char)*r))
                return false;
        return true;
    }
    if (strcmp(path, "/dev/kfd") == 0)
        return true;
    if (strncmp(path, "/dev/dri/renderD", 16) == 0 && isdigit((unsigned char)path[16]))
        return true;
    return false;
}

bool sop__gpu_wait_syscall(long nr)
{
    return nr >= 0 &&
           (nr == SOP_NR_IOCTL || nr == SOP_NR_POLL || nr == SOP_NR_PPOLL || nr == SOP_NR_FUTEX ||
            nr == SOP_NR_SCHED_YIELD || nr == SOP_NR_NANOSLEEP || nr == SOP_NR_CLOCK_NANOSLEEP ||
            nr == SOP_NR_EPOLL_WAIT || nr == SOP_NR_EPOLL_PWAIT);
}

bool sop__syscall_is_ioctl(long nr)
{
    return nr == SOP_NR_IOCTL;
}
