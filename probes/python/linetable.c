/* linetable.c — CPython line tables decoded from bytes, one function per format, following
 * Objects/codeobject.c of each version (PyCode_Addr2Line). Pure; libc only. */
#include "linetable.h"

#include <limits.h>
#include <stdint.h>

/* Lines are summed in 64 bits (a torn or hostile table can push them past INT_MAX); a
 * result outside 0..INT_MAX is "no line" (-1). */
static int clamp_line(int64_t line)
{
    return line < 0 || line > INT_MAX ? -1 : (int)line;
}

/* 3.8-3.9 co_lnotab: pairs (unsigned byte-offset increment, signed line increment). */
static int lnotab_line(const uint8_t *p, size_t len, int line0, int addrq)
{
    int64_t addr = 0, line = line0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += p[i];
        if (addr > addrq)
            break;
        line += (int8_t)p[i + 1];
    }
    return clamp_line(line);
}

/* 3.10 co_linetable: pairs (unsigned byte-length of the range, signed line delta; -128 = no
 * line). Empty ranges only carry a line change. */
static int linetable310_line(const uint8_t *p, size_t len, int line0, int addrq)
{
    int64_t end = 0, line = line0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        int64_t start = end;
        end += p[i];
        int8_t ld = (int8_t)p[i + 1];
        int cur = -1;
        if (ld != -128) {
            line += ld;
            cur = clamp_line(line);
        }
        if (start != end && addrq >= start && addrq < end)
            return cur;
    }
    return -1;
}

/* 3.11+: varints of 6-bit chunks, bit 6 = more. */
static unsigned read_varint(const uint8_t *p, size_t len, size_t *i)
{
    unsigned val = 0, shift = 0;
    while (*i < len && shift < 32) {
        uint8_t b = p[(*i)++];
        val |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    return val;
}

static int read_svarint(const uint8_t *p, size_t len, size_t *i)
{
    unsigned u = read_varint(p, len, i);
    return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

/* 3.11+ location table: each entry starts with a byte with bit 7 set: code = bits 3-6,
 * length in code units = (bits 0-2) + 1. Codes: 15 no location; 14 long form and 13 no
 * columns carry a signed line delta; 10-12 one-line forms with delta code-10; 0-9 short
 * forms, same line. */
static int locations_line(const uint8_t *p, size_t len, int line0, int addrq)
{
    int64_t addr = 0, line = line0;
    size_t i = 0;
    while (i < len) {
        uint8_t first = p[i];
        if (!(first & 0x80)) { /* not at an entry start: malformed */
            return -1;
        }
        int code = (first >> 3) & 15;
        int units = (first & 7) + 1;
        size_t j = i + 1;
        int delta = 0;
        if (code == 13 || code == 14)
            delta = read_svarint(p, len, &j);
        else if (code >= 10 && code <= 12)
            delta = code - 10;
        line += delta;
        int64_t end = addr + units * 2;
        if (addrq >= addr && addrq < end)
            return code == 15 ? -1 : clamp_line(line);
        addr = end;
        /* skip to the next entry start */
        i++;
        while (i < len && !(p[i] & 0x80))
            i++;
    }
    return -1;
}

int sop__py_addr2line(sop_pylines_kind kind, const uint8_t *tab, size_t len, int firstlineno,
                      int addr_bytes)
{
    if (addr_bytes < 0)
        return firstlineno;
    switch (kind) {
    case SOP_PYLINES_LNOTAB:
        return lnotab_line(tab, len, firstlineno, addr_bytes);
    case SOP_PYLINES_310:
        return linetable310_line(tab, len, firstlineno, addr_bytes);
    case SOP_PYLINES_LOCATIONS:
        return locations_line(tab, len, firstlineno, addr_bytes);
    }
    return -1;
}
