/* zalloc.h — zero-filled tables sized for the worst case that cost memory only where they are
 * written: big ones are mapped fresh from the kernel (untouched pages stay unbacked and are
 * returned whole when freed), small ones come from calloc. Depends on libc only. */
#ifndef SOP_ZALLOC_H
#define SOP_ZALLOC_H

#include <stddef.h>

/* n * size zero bytes (NULL on overflow or when out of memory); free with sop__zfree. */
void *sop__zalloc(size_t n, size_t size);
/* Frees what sop__zalloc returned; NULL is fine. */
void sop__zfree(void *p);

#endif
