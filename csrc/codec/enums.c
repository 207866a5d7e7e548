/* The verbs enum table exported to Python (generated from ib_enums.def). */
#include "rdmasim/ib.h"

#include <stddef.h>

static const rs_enum_entry rs_enum_rows[] = {
#define RS_ENUM(group, name, value) {#group, #name, (value)},
#include "rdmasim/ib_enums.def"
#undef RS_ENUM
    {NULL, NULL, 0},
};

const rs_enum_entry *rs_enum_table(void) { return rs_enum_rows; }
