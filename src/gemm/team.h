/* team.h: a few threads of the host engine's own (team.c), to run one call's parts side by
 * side: part 0 on the calling thread, the others on helpers that sleep between calls. */
#ifndef CLG_GEMM_TEAM_H
#define CLG_GEMM_TEAM_H

#include <stdbool.h>

/* How many parts a call can run at once: the CPUs this process may run on (at most 16),
 * or 1 where no helper could be started. */
int clg__team_size(void);

/* Runs fn(arg, p, parts) for p < parts, p = 0 on the caller, and returns when all have
 * returned. Where another thread holds the team, or parts exceeds its size, every part
 * runs on the caller in turn: the same results either way. */
void clg__team_run(void (*fn)(void *arg, int part, int parts), void *arg, int parts);

#endif
