/* utf8.c — one strict UTF-8 decoder for everything that writes text (the JSON printer, the
 * escapers, the evidence's text values), and the controls every output spells out. Depends on
 * libc. */
#include "utf8.h"

size_t sop__utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else
        return 0;
    if (avail < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* The code point of a valid sequence of n bytes (n from sop__utf8_seq, 2..4). */
static unsigned decode(const unsigned char *p, size_t n)
{
    if (n == 2)
        return (p[0] & 0x1fu) << 6 | (p[1] & 0x3fu);
    if (n == 3)
        return (p[0] & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
    return (p[0] & 0x07u) << 18 | (p[1] & 0x3fu) << 12 | (p[2] & 0x3fu) << 6 | (p[3] & 0x3fu);
}

bool sop__is_format_control(unsigned cp)
{
    return cp == 0x061c ||                   /* Arabic letter mark */
           (cp >= 0x200b && cp <= 0x200f) || /* zero-width space/joiners, LRM, RLM */
           (cp >= 0x2028 && cp <= 0x202e) || /* line/paragraph separators, LRE..RLO */
           (cp >= 0x2060 && cp <= 0x2069) || /* word joiner, invisible operators, LRI..PDI */
           cp == 0xfeff ||                   /* zero-width no-break space (BOM) */
           (cp >= 0xfff9 && cp <= 0xfffb);   /* interlinear annotation */
}

/* A control the escapers spell out: a C1 control or a format control, from a valid sequence. */
static bool escaped_cp(const unsigned char *p, size_t n)
{
    if (n < 2)
        return false;
    unsigned cp = decode(p, n);
    return (cp >= 0x80 && cp < 0xa0) || sop__is_format_control(cp);
}

unsigned sop__utf8_spelled(const unsigned char *p, size_t n)
{
    return escaped_cp(p, n) ? decode(p, n) : 0;
}
