/* fuzz_elf.c — libFuzzer target: the ELF64 reader (validation, symbol look-up, function
 * symbol table, sections, PY_VERSION scan) over an arbitrary buffer; and maps look-up.
 * Depends on probes/python/elf.h. */
#include "fuzz.h"
#include "python/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy: the reader must not touch a byte past the end. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    sop_elf e;
    if (sop__elf_from_buffer(buf, size, &e) == 0) {
        uint64_t v, sz, addr, off;
        (void)sop__elf_symbol(&e, "_PyRuntime", &v, &sz);
        (void)sop__elf_symbol(&e, "PyCode_Type", &v, &sz);
        sop_elf_sym *syms = NULL;
        size_t n = 0;
        if (sop__elf_func_symbols(&e, &syms, &n) == 0) {
            for (size_t i = 0; i < n && i < 64; i++)
                (void)sop__elf_sym_at(syms, n, syms[i].value);
            (void)sop__elf_sym_at(syms, n, 0x1000);
            free(syms);
        }
        (void)sop__elf_section(&e, ".rodata", &addr, &sz, &off);
        (void)sop__elf_section(&e, ".PyRuntime", &addr, &sz, &off);
        char ver[32];
        (void)sop__elf_find_version(&e, -1, ver, sizeof ver);
        (void)sop__elf_find_version(&e, 11, ver, sizeof ver);
        (void)sop__elf_bias(&e, 0x400000);
        sop__elf_close(&e);
    }
    char *s = fuzz_cstr(data, size);
    sop_mapping m;
    (void)sop__maps_find(s, "libpython3.11.so.1.0", &m);
    (void)sop__maps_find(s, "/python3", &m);
    free(s);
    free(buf);
    return 0;
}
