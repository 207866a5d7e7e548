/* Congestion-control plug-ins: rs_cc_algo tables compiled outside rdmasim (rdmasim.cc_plugin builds
 * them with cffi against the public headers) and registered with one simulation.
 *
 * Each simulation keeps copies of its plug-ins' tables (rs_transport.cc_plugins, no globals): a
 * plug-in's kind is RS_CC_COUNT + its slot, and the copy's `kind` and `name` are the registry's,
 * whatever the compiled table says.  A host's parameters for a plug-in live in a block of their own
 * (rs_host.cc_plugin_params), allocated when the host selects it; the NIC then calls the plug-in
 * exactly as a built-in algorithm (cc_qp.c), through the same function pointers. */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

const rs_cc_algo *rs_tp_cc_algo(const rs_transport *tp, int kind)
{
    if (kind >= RS_CC_COUNT && (uint32_t)(kind - RS_CC_COUNT) < tp->n_cc_plugins)
        return &tp->cc_plugins[kind - RS_CC_COUNT];
    return rs_cc_algo_get(kind);
}

const char *rs_tp_cc_name(const rs_transport *tp, int kind)
{
    if (kind >= RS_CC_COUNT && (uint32_t)(kind - RS_CC_COUNT) < tp->n_cc_plugins)
        return tp->cc_plugin_names[kind - RS_CC_COUNT];
    return rs_cc_kind_name(kind);
}

static int name_taken(const rs_transport *tp, const char *name)
{
    for (int k = 0; k < RS_CC_COUNT + (int)tp->n_cc_plugins; k++) {
        const char *n = rs_tp_cc_name(tp, k);
        if (n && !strcmp(n, name))
            return 1;
    }
    return 0;
}

int rs_tp_cc_plugin_add(rs_transport *tp, const rs_cc_algo *algo, const char *name)
{
    const unsigned known = RS_CC_WANTS_ACKS | RS_CC_WANTS_INT | RS_CC_WANTS_RTT | RS_CC_ASKS_BLIND;
    if (!algo || !name || !name[0])
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in: needs a table and a name");
    size_t len = strlen(name);
    if (len >= RS_CC_PLUGIN_NAME)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in name '%.40s...' is %zu bytes long "
                          "(at most %d)", name, len, RS_CC_PLUGIN_NAME - 1);
    if (name_taken(tp, name))
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control '%s' exists already in this simulation "
                          "(built in or registered before)", name);
    if (algo->state_size > RS_CC_STATE_BYTES)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in '%s': state_size %zu bytes, allowed "
                          "0..%d (RS_CC_STATE_BYTES)", name, algo->state_size, RS_CC_STATE_BYTES);
    if (algo->params_size > RS_CC_PARAMS_BYTES)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in '%s': params_size %zu bytes, allowed "
                          "0..%d (RS_CC_PARAMS_BYTES)", name, algo->params_size, RS_CC_PARAMS_BYTES);
    if (!algo->init || !algo->rate_bps)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in '%s': missing required callback%s%s",
                          name, algo->init ? "" : " init", algo->rate_bps ? "" : " rate_bps");
    if (algo->next_timer_ps && !algo->on_timer)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in '%s': next_timer_ps needs on_timer",
                          name);
    if (algo->flags & ~known)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control plug-in '%s': flags 0x%x has unknown bits "
                          "(allowed: RS_CC_WANTS_ACKS | RS_CC_WANTS_INT | RS_CC_WANTS_RTT | RS_CC_ASKS_BLIND = "
                          "0x%x)", name, algo->flags, known);
    if (tp->n_cc_plugins >= RS_CC_PLUGINS)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "congestion control plug-in '%s': all %d plug-in slots of this "
                          "simulation are used", name, RS_CC_PLUGINS);
    uint32_t i = tp->n_cc_plugins++;
    memcpy(tp->cc_plugin_names[i], name, len + 1);
    tp->cc_plugins[i] = *algo;
    tp->cc_plugins[i].kind = RS_CC_COUNT + (int)i;
    tp->cc_plugins[i].name = tp->cc_plugin_names[i];
    return RS_CC_COUNT + (int)i;
}
