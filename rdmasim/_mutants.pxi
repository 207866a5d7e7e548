# Mutants (csrc/include/rdmasim/mutants.h): deliberately wrong behaviours compiled in only with
# RDMASIM_MUTANTS=1; used by rdmasim.testing.mutants to prove the invariant checkers catch bugs.

cdef extern from "rdmasim/mutants.h" nogil:
    int RS_MUTANTS_BUILT
    int RS_MUT__COUNT
    int rs_sim_set_mutant(rs_sim *sim, int mutant)

MUTANTS_BUILT = bool(RS_MUTANTS_BUILT)
MUTANT_COUNT = RS_MUT__COUNT


def sim_set_mutant(SimCore core, int mutant):
    """Select mutant `mutant` (0 = none) in this simulation; RuntimeError in normal builds."""
    if not RS_MUTANTS_BUILT:
        raise RuntimeError("this rdmasim._core was built without mutants")
    if not 0 <= mutant < RS_MUT__COUNT:
        raise ValueError(f"unknown mutant {mutant}")
    if rs_sim_set_mutant(core.sim, mutant) != 0:
        raise RuntimeError(f"rs_sim_set_mutant({mutant}) failed")
