# cython: language_level=3, boundscheck=False, wraparound=False
"""rdmasim._core: the one compiled boundary between Python and the C core (csrc/).

Each area of the C API has its own include file, so that each stays small:
  _enums.pxi   verbs enum table (csrc/include/rdmasim/ib_enums.def)
  _codec.pxi   RoCEv2 encode/decode, ICRC, pcap (csrc/codec)
  _engine.pxi  event queue, RNG and QP-number table test handles (csrc/core, transport/qpn.h)
  _cc.pxi      congestion-control test handles (csrc/cc)
  _sim.pxi     simulation, hosts, links, memory regions, CQs, QPs (csrc/core, csrc/net, csrc/transport)
  _par_rank.pxi  MPI ranks of a partitioned run: the allgather callback, frame records (csrc/sim/par_rank.c)
  _trace.pxi   packet/event trace drained into numpy arrays (csrc/core/trace.c)
  _fabric.pxi  switches, links between any nodes, link failure, fabric counters (csrc/net)
  _mutants.pxi testing-only mutants (RDMASIM_MUTANTS=1 builds; rdmasim.testing.mutants)
  _flows.pxi   bulk flows from arrays, per-flow results (csrc/workload)
  _uet_stats.pxi  a host's UET PDC establishment and close counters (csrc/sim/uet_api.c)
  _wr.pxi      fields of the verbs work-request objects, their common case built in C
  _post.pxi    verbs fast path: send WR chains and arrays posted, completions polled in one call
Python never runs per packet: these are control-path calls and bulk reads.
"""

include "_enums.pxi"
include "_codec.pxi"
include "_engine.pxi"
include "_cc.pxi"
include "_cc_dctcp.pxi"
include "_cc_timely.pxi"
include "_cc_swift.pxi"
include "_cc_hpcc.pxi"
include "_cc_ibcc.pxi"
include "_cc_nscc.pxi"
include "_uet_cc.pxi"
include "_sim.pxi"
include "_par_rank.pxi"
include "_trace.pxi"
include "_fabric.pxi"
include "_mutants.pxi"
include "_flows.pxi"
include "_uet_stats.pxi"
include "_wr.pxi"
include "_post.pxi"
