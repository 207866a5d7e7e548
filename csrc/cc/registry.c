/* Congestion-control algorithms by kind. A new algorithm adds one row here (its name is below). */
#include "rdmasim/cc.h"

#include <stddef.h>

extern const rs_cc_algo rs_cc_dcqcn;
extern const rs_cc_algo rs_cc_dctcp;
extern const rs_cc_algo rs_cc_timely;
extern const rs_cc_algo rs_cc_swift;
extern const rs_cc_algo rs_cc_hpcc;
extern const rs_cc_algo rs_cc_ibcc;
extern const rs_cc_algo rs_cc_nscc;

static const rs_cc_algo *const algos[RS_CC_COUNT] = {
    [RS_CC_DCQCN] = &rs_cc_dcqcn,
    [RS_CC_DCTCP] = &rs_cc_dctcp,
    [RS_CC_TIMELY] = &rs_cc_timely,
    [RS_CC_SWIFT] = &rs_cc_swift,
    [RS_CC_HPCC] = &rs_cc_hpcc,
    [RS_CC_IBCC] = &rs_cc_ibcc,
    [RS_CC_NSCC] = &rs_cc_nscc,
};

static const char *const names[RS_CC_COUNT] = {
    [RS_CC_NONE] = "none",     [RS_CC_DCQCN] = "dcqcn", [RS_CC_DCTCP] = "dctcp",
    [RS_CC_TIMELY] = "timely", [RS_CC_SWIFT] = "swift", [RS_CC_HPCC] = "hpcc",
    [RS_CC_IBCC] = "ibcc",     [RS_CC_NSCC] = "nscc",
};

const rs_cc_algo *rs_cc_algo_get(int kind)
{
    return kind >= 0 && kind < RS_CC_COUNT ? algos[kind] : NULL; /* RS_CC_NONE: line rate */
}

const char *rs_cc_kind_name(int kind) { return kind >= 0 && kind < RS_CC_COUNT ? names[kind] : NULL; }
