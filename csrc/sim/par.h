/* A run split into partitions (sim/par.c): the simulation's partition table and its loop. */
#ifndef RDMASIM_SIM_PAR_H
#define RDMASIM_SIM_PAR_H

#include <stdint.h>

#include "rdmasim/sim.h"

typedef struct rs_par rs_par;
struct rs_par_rank;

void rs_par_free(rs_par *p);
/* The partitioned event loop (rs_sim_run with a partition table). */
int rs_par_run(rs_sim *sim, const rs_run_args *a);
/* The table's partitions, each host's partition, and its MPI rank's share (sim/par_rank.c;
 * set takes ownership). */
uint32_t rs_par_parts(const rs_par *p);
const uint16_t *rs_par_host_part(const rs_par *p);
struct rs_par_rank *rs_par_get_rank(const rs_par *p);
void rs_par_set_rank(rs_par *p, struct rs_par_rank *k);

#endif
