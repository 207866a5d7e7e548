/* The public congestion-control plug-in calls (rdmasim/verbs.h): each hands over the transport. */
#include "sim/sim_impl.h"

int rs_cc_plugin_add(rs_sim *sim, const rs_cc_algo *algo, const char *name)
{
    return rs_tp_cc_plugin_add(&sim->tp, algo, name);
}

const char *rs_cc_name(const rs_sim *sim, int kind) { return rs_tp_cc_name(&sim->tp, kind); }
