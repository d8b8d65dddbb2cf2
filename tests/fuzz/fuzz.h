/* fuzz.h — shared by the libFuzzer targets in tests/fuzz/: the input as a NUL-terminated copy
 * (the parsers take C strings; the copy has no slack so ASan sees any read past the end).
 * Depends on libc only. */
#ifndef SOP_FUZZ_H
#define SOP_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
