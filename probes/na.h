/* na.h — SOP_NA, the one "not measured" value of an integer field: probes leave it where a read
 * failed and the bridge (engine/core/value.c) leaves such a key out. Depends on <stdint.h> only. */
#ifndef SOP_NA_H
#define SOP_NA_H

#include <stdint.h>

#define SOP_NA INT64_MIN

#endif
