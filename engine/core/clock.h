/* clock.h — the engine's clocks, in one place: monotonic milliseconds for deadlines, windows and
 * timings, wall-clock seconds for timestamps. Any part of the engine includes it without
 * pulling in the API's insides (engine.h). Depends on libc. */
#ifndef SOP_CLOCK_H
#define SOP_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds. */
double sop__now_ms(void);

/* CLOCK_REALTIME in seconds since the epoch. */
double sop__wall_s(void);

#endif
