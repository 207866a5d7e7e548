/* One partitioned run over several processes (MPI ranks; sim/par_rank.c).  Every rank builds the
 * same simulation and runs the same partitioned loop (sim/par.c); each handles the events of its
 * own partitions only, and the global events on its copy.  Wherever the loop reads the state of
 * every partition (after each job), the ranks agree: each sends one message to all the others
 * through the caller's allgather (rdmasim.mpi: mpi4py) carrying the frames its partitions put on
 * cut links to partitions of other ranks, the state of its partitions the loop reads (flows left,
 * last event, how the job ended, clock, events), the earliest event of its partitions, its failure,
 * the finished flows whose QP pairs wait for release, and its next global event (which must be
 * every rank's). */
#ifndef RDMASIM_SIM_PAR_RANK_H
#define RDMASIM_SIM_PAR_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/sim.h"
#include "rdmasim/eventq.h"
#include "rdmasim/flows.h"

struct rs_link;

/* Send `len` bytes at `send` to every rank and receive every rank's (this one's included) in rank
 * order, concatenated at *recv, rank r's *lens[r] bytes long (valid until the next call): 0, or -1
 * (the run fails). */
typedef int (*rs_par_allgather_fn)(void *ctx, const uint8_t *send, size_t len, const uint8_t **recv,
                                   const uint64_t **lens);

typedef struct rs_par_rank rs_par_rank;

/* What a rank's agreement reads and writes of the partitioned loop's state (sim/par.c fills it). */
typedef struct rs_par_view {
    rs_sim *sim;
    uint32_t P;
    rs_eventq **qv;       /* qv[i]: partition i's queue; qv[P]: the global one */
    rs_sim *ps;           /* by partition: the copy it runs on (its clock, events) */
    uint64_t *left;       /* by partition: flows not finished (NULL: the run does not stop on them) */
    int64_t *last_t;      /* by partition: its latest event */
    uint64_t *last_seq;
    int *ret;             /* by partition: how its last job ended */
    struct rs_link **cut; /* the links between two partitions */
    uint32_t n_cut;
    const uint16_t *host_part, *switch_part;
    int64_t pending_t; /* the earliest arrival of a frame this rank's partitions sent that waits
                        * outside the links' FIFOs (INT64_MAX: none) */
} rs_par_view;

/* The ranks of the simulation's partitioned runs from now on: `n_ranks` processes, this one `me`,
 * partition i run by owner[i] (parts entries, each < n_ranks); n_ranks 0: one process again.
 * RS_OK or an error (the message says which value). */
int rs_sim_par_ranks(rs_sim *sim, uint32_t n_ranks, uint32_t me, const uint16_t *owner, uint32_t parts,
                     rs_par_allgather_fn fn, void *ctx);
void rs_par_rank_free(rs_par_rank *k);
/* Why a run over ranks cannot hold this simulation (a sentence), or NULL. */
const char *rs_par_rank_refused(const rs_par_rank *k, const rs_sim *sim, const uint16_t *host_part,
                                const uint16_t *switch_part, uint32_t threads);
/* 1 when this rank runs partition i. */
int rs_par_rank_owns(const rs_par_rank *k, uint32_t i);
/* The ranks exchange and agree (see above); a failure fails the run (the simulation's engine). */
void rs_par_rank_agree(rs_par_rank *k, const rs_par_view *v);
/* The earliest event of every partition at the last agreement (INT64_MAX: none). */
int64_t rs_par_rank_head(const rs_par_rank *k);
/* Agreements so far (windows and the steps around global events). */
uint64_t rs_par_rank_agreements(const rs_par_rank *k);
/* The ranks of the last (or running) run over ranks: its agreements, the wall time spent in them
 * and, within that, in the caller's exchange (the rest: writing and reading the messages).
 * RS_OK, or RS_ERR_INVAL (no ranks set; every figure 0). */
int rs_sim_par_rank_times(const rs_sim *sim, uint64_t *agreements, uint64_t *agree_ns, uint64_t *fn_ns);

/* After a run: this rank's part of the flow table (the results of the flows its partitions
 * requested, the responder's share of flows another rank requested) into *out (malloc'd, *len
 * bytes); then every rank's, in rank order, into the table.  RS_OK or an error. */
int rs_par_rank_flows_out(rs_sim *sim, uint8_t **out, size_t *len);
int rs_par_rank_flows_in(rs_sim *sim, const uint8_t *all, const uint64_t *lens, uint32_t n_ranks);

#endif
