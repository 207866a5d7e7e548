/* Mutants: deliberately wrong protocol behaviours for testing the invariant checkers
 * (rdmasim.testing).  They exist only when the core is compiled with -DRDMASIM_MUTANTS;
 * in normal builds every mutant site compiles away and rs_sim_set_mutant is not defined
 * (the Cython layer sees RS_MUTANTS_BUILT == 0 and a stub that refuses). */
#ifndef RDMASIM_MUTANTS_H
#define RDMASIM_MUTANTS_H

typedef struct rs_sim rs_sim;

enum rs_mutant {
    RS_MUT_NONE = 0,
    RS_MUT_NAK_STICKY = 1,     /* responder never clears its NAK-sent flag: later gaps go un-NAKed */
    RS_MUT_REWIND_PSN = 2,     /* requester retransmits from the PSN after the one asked for */
    RS_MUT_ACK_AHEAD = 3,      /* ACK coalescing acknowledges one PSN past the one received */
    RS_MUT_PFC_EARLY_XON = 4,  /* switch sends XON at the first dequeue, still above XON */
    RS_MUT_CNP_HALF_INTERVAL = 5, /* NP rate limiter compares against interval >> 1 */
    RS_MUT_DCQCN_NO_FLOOR = 6, /* DCQCN rate cut forgets the min-rate clamp */
    RS_MUT_DROP_UNCOUNTED = 7, /* switch does not count lossy-threshold drops */
    RS_MUT_LOSSLESS_DROP = 8,  /* switch drops lossless packets at XOFF instead of pausing */
    RS_MUT_RETRY_TO_RESET = 9, /* retry exhaustion leaves the QP in RESET instead of ERR */
    RS_MUT__COUNT = 10,
};

#ifdef RDMASIM_MUTANTS
#define RS_MUTANTS_BUILT 1
/* Select the mutant active in this simulation (RS_MUT_NONE: none). Returns RS_OK or an error. */
int rs_sim_set_mutant(rs_sim *sim, int mutant);
#define RS_MUTANT(eng, m) ((eng)->mutant == (m)) /* eng: the rs_engine (engine/engine.h) */
#else
#define RS_MUTANTS_BUILT 0
/* normal build: no mutant support; this stub only lets the Cython layer link and refuse */
static inline int rs_sim_set_mutant_stub(rs_sim *sim, int mutant)
{
    (void)sim;
    (void)mutant;
    return -1;
}
#define rs_sim_set_mutant rs_sim_set_mutant_stub
#endif

#endif
