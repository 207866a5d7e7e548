/* Congestion-control algorithms by kind. A new algorithm adds one row here. */
#include "rdmasim/cc.h"

#include <stddef.h>

extern const rs_cc_algo rs_cc_dcqcn;

const rs_cc_algo *rs_cc_algo_get(int kind)
{
    switch (kind) {
    case RS_CC_DCQCN:
        return &rs_cc_dcqcn;
    default:
        return NULL; /* RS_CC_NONE: line rate */
    }
}
