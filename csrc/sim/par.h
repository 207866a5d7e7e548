/* A run split into partitions (sim/par.c): the simulation's partition table and its loop. */
#ifndef RDMASIM_SIM_PAR_H
#define RDMASIM_SIM_PAR_H

#include <stdint.h>

#include "rdmasim/sim.h"

typedef struct rs_par rs_par;

void rs_par_free(rs_par *p);
/* The partitioned event loop (rs_sim_run with a partition table). */
int rs_par_run(rs_sim *sim, const rs_run_args *a);

#endif
