/* utf8.h — strict UTF-8: the length of a valid sequence, and the code points every output
 * format spells out (C1 and invisible format controls). Pure. */
#ifndef SOP_UTF8_H
#define SOP_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (1..4; strict: no overlong forms, no surrogates,
 * nothing above U+10FFFF), or 0 when the bytes there are not one. avail: bytes readable. */
size_t sop__utf8_seq(const unsigned char *p, size_t avail);
/* Bidirectional and other invisible format controls (U+202A..202E, U+2066..2069, U+200B..200F,
 * U+2028/2029, U+061C, U+2060..2065, U+FEFF, U+FFF9..FFFB): escaped like C1 controls in every
 * format, so a name cannot reorder or split a terminal line. */
bool sop__is_format_control(unsigned cp);
/* The code point of the valid n-byte UTF-8 sequence at p when every escaper spells it out (a C1
 * or a format control: \uXXXX), else 0. */
unsigned sop__utf8_spelled(const unsigned char *p, size_t n);

#endif
