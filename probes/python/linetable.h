/* linetable.h — line number of a byte offset in a code object, for each CPython line-table
 * format (3.8-3.9 co_lnotab, 3.10 co_linetable, 3.11+ PEP 657 locations). Pure; libc only. */
#ifndef SOP_LINETABLE_H
#define SOP_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "py_layouts.h"

/* Line of the instruction at byte offset addr_bytes (negative: before the first instruction,
 * gives firstlineno, like PyCode_Addr2Line). -1 when the table says "no line" or the offset
 * lies past the table. Never reads outside tab[0..len). */
int sop__py_addr2line(sop_pylines_kind kind, const uint8_t *tab, size_t len, int firstlineno,
                      int addr_bytes);

#endif
