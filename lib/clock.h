/* The monotonic clock every tool measures waits and deadlines with. */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t sbx_now_ms(void);

#endif
