# Verbs enums, read from the C table generated from ib_enums.def.
from libc.stdint cimport int64_t

cdef extern from "rdmasim/ib.h":
    ctypedef struct rs_enum_entry:
        const char *group
        const char *name
        int64_t value
    const rs_enum_entry *rs_enum_table()


def enum_table():
    """Return [(group, name, value), ...] from csrc/include/rdmasim/ib_enums.def."""
    cdef const rs_enum_entry *row = rs_enum_table()
    out = []
    while row.group != NULL:
        out.append((row.group.decode(), row.name.decode(), row.value))
        row += 1
    return out
