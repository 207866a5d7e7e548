/* What every public header shares: the simulation handle every call takes, the error codes
 * calls return, and the latest time a value entering the core may name.  The bottom of the
 * public API (engine layer): it knows nothing of what a simulation holds. */
#ifndef RDMASIM_BASE_H
#define RDMASIM_BASE_H

#include <stdint.h>

typedef struct rs_sim rs_sim;

enum rs_err {
    RS_OK = 0,
    RS_ERR_INVAL = -1,   /* bad argument (value out of range, unknown id) */
    RS_ERR_NOMEM = -2,   /* out of memory, or a queue is full */
    RS_ERR_STATE = -3,   /* not allowed in the object's current state */
    RS_ERR_BUSY = -4,    /* object still in use */
    RS_ERR_IO = -5,      /* file error */
};

/* Latest time a value entering the core may name (rdmasim.checks.MAX_TIME_PS): 2^62 ps, so the
 * sum of two such times (a start plus a delay) cannot wrap the int64 clock. */
#define RS_MAX_TIME_PS ((int64_t)1 << 62)

#endif
