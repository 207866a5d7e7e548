"""Render the scenario reference (docs/scenarios.md) from the schema.

Regenerate with ``python -m rdmasim.scenario.docs > docs/scenarios.md``; a test checks it is in sync.
"""

from __future__ import annotations

import sys

from rdmasim.scenario.schema import SCHEMA, SECTIONS, Opt

INTRO = """# Scenario files

A scenario is a TOML file: a fabric, traffic and impairments in; results out.

```console
$ rdmasim validate examples/incast.toml   # exit 0 and "ok", or every problem and exit 2
$ rdmasim run examples/incast.toml        # progress bar on stderr, summary table, results folder
```

`python -m rdmasim ...` is the same command. The progress bar is drawn only when stderr is a
terminal; `-q` turns it off, `-v` shows more (every flow in the summary, the run's estimate, and
the traceback of an error). Both go before or after the command (`rdmasim -q run f.toml`).

`rdmasim run FILE --set KEY=VALUE` changes one value of the file for this run, without editing it;
repeat it for more keys. Keys and values are those of [sweeps](sweeps.md)' `--param` (the same
parser): a key path of the reference below (`link.rate`, `switch.ecn.kmin`), a row of an array of
tables by its index or `[]` for every row (`flows[0].size`, `flows[].size`), a value in TOML syntax
where a bare word needs no quotes (`--set link.rate=25Gbps --set 'switch.lossless=[3]'`). A bad
key or value is one line naming it, exit status 2, before anything runs; a `--set` with several
values (commas outside brackets) is refused: that is a sweep. `--seed N` is short for
`--set simulation.seed=N`.

`rdmasim run` exits with status 0 when every flow completed successfully and 1 when one did not
(still running at `simulation.duration`, or ended by an error completion).

`rdmasim run` writes into `[outputs] dir` every table of the run - `flows` (one row per flow),
`ports` (counters of every switch port and host NIC) and, with `sample_interval`, `flow_samples`
and `queue_samples` - as Parquet (`flows.parquet`, ...) when pyarrow is installed and as CSV
(`flows.csv`, ...) otherwise (`formats = ["csv", "parquet"]` asks for both); also
`switch_counters.json`, `timeseries.npz` (the same time series as numpy arrays), `plots/` (PNG
and SVG), `scenario.toml` (the file as run) and `metadata.json` (seed, rdmasim version and the
values `--set` changed) so a result can be reproduced. In Python, `RunResult.frames()` gives every
table as a pandas DataFrame and `rdmasim.results.read_table(folder, "flows")` reads one back from a
results folder.

Every column name says its unit: `_ps` picoseconds (integers), `_bytes` bytes, `_bps` bits per
second, `_pkts` packets, `_frames` Ethernet frames; a name without a suffix is a count, a label or
a ratio.

* `flows`: `flow_id`, `src`, `dst`, `verb`, `size_bytes`, `priority`, `start_ps`, `finish_ps`
  (empty, or `<NA>` in a DataFrame, if the flow did not finish), `fct_ps`, `ideal_fct_ps`,
  `slowdown` (FCT / ideal FCT), `bytes_delivered`, `retx_pkts`, `cnps` (CNPs received),
  `status`, `pause_ps` (PFC pause the source NIC saw while the flow ran), `group` (its generator).
* `ports`: `node`, `kind` (switch or host), `port`, `rx_pkts`, `tx_pkts`, `rx_bytes`, `tx_bytes`,
  `drops`, `ecn_marked`, `pfc_xoff_sent`, `pfc_rx_frames`, `paused_ps`, `credit_stall_ps`
  (InfiniBand credits: time with a packet to send and too few credits, summed over VLs),
  `egress_peak_bytes`, `ingress_peak_bytes`, `trimmed_pkts` (packets trimmed to their headers for
  this egress port, `[switch] trimming`).
* `flow_samples`: `t_ps`, `flow_id`, `bytes_acked` (cumulative), `rate_bps` (the DCQCN limit;
  0 = none, line rate).
* `queue_samples`: `t_ps`, `probe` (`SWITCH:PORT->NEXT_HOP pPRIORITY`, e.g. `s0:8->h8 p3`),
  `egress_bytes`, `ingress_bytes`, `paused`.
* `uet_endpoints` (only with `transport.kind = "uet"`): one row per host, `node` and its UET
  endpoint counters (`rdmasim.uet.endpoint_stats`, [UET](uet.md)): `syn_sent`, `pdcs_created`,
  `closes_sent`, `pdcs_closed`, `pdcs_released`, `close_gave_up`, `pdcs_live` (PDC ids in use when
  the run ended), `rx_unknown`, `pdcs_refused` (SYNs NACKed `NO_PDC_AVAIL`: `uet.max_pdcs`),
  `close_reqs_sent`. The summary sums them in one line (`UET PDCs: ...`).

Flows go to the C core as arrays (`rdmasim.flows`): each runs as one RC work request on its own
QP pair, created at its start time and freed when it completes; packets carry lengths, not
payload bytes. Collectives are flows with dependencies (a flow starts when the flows it waits for
have finished).

Slowdown = FCT / ideal FCT, and `outputs.ideal_fct` says which ideal FCT, one of two lower bounds:

* `"wire"` (the default): the FCT of the flow alone on an idle fabric. Its data frames' bytes on
  the wire (every header, ICRC, FCS, preamble and inter-frame gap; on InfiniBand LRH, VCRC and
  delimiters) at the slower NIC's line rate, the largest data frame once more at every further
  hop (store and forward), the frame that closes the flow (the ACK; a READ's request) at every
  hop, and a round trip of propagation delay and switch latency on the lowest-delay path. This is
  how the HPCC authors' simulator counts it (headers per packet and a packet's time per hop), so
  a flow alone on the fabric shows 1.00 and slowdowns compare with the papers' figures.
* `"payload"`: `size` at the slower NIC's line rate plus the round trip of propagation delay (no
  headers): a flow alone shows the header overhead, about 1.08 at MTU 1024 and 1.02 at 4096.

The choice is stated with every slowdown: the summary line of `rdmasim run`, `metadata.json`
(`ideal_fct`, and `columns` describing `slowdown` and `ideal_fct_ps`), the `description` of those
columns in `flows.parquet`, `RunResult.to_pandas().attrs["ideal_fct"]` and the slowdown plots'
axis.

Values with units: times `"1us"` (`ps`, `ns`, `us`, `ms`, `s`), rates `"100Gbps"` (`bps`, `Kbps`,
`Mbps`, `Gbps`, `Tbps`; `B/s` for bytes), sizes `"1MiB"` or a bare number of bytes (`65536`). A
time or a rate needs its unit: a bare number is refused, in the file as in an override
(`rdmasim sweep --param`), with one line such as

```text
s.toml: link.delay = 1: a time needs a unit, e.g. "1us" (units: ps, ns, us, ms, s)
```

only `0` (the same in every unit) may be written bare. This holds also for the times and rates of
`[nic.overrides]` (`ack_timeout`, `pfc_response`) and of `[congestion_control.overrides]` with the
`paper` preset (the mlxconfig names of the `nvidia` preset are integers in their own documented
units). Counts, probabilities and fractions (`qp.timeout`, `link.loss`, `traffic.poisson.load`)
are plain numbers. The Python API is unchanged: where it takes a time, a rate or a size, an int is
picoseconds, bits/s or bytes (`back_to_back(delay=1_000_000)` is 1 us).

Every option below has the default shown; `[]` marks an array of tables (`[[flows]]`).

## Errors

`rdmasim validate` reports every problem of a file at once, one line each, naming the file, the
key, the value and what is allowed, and exits with status 2:

```text
incast.toml: link.loss = nan: not a finite number (allowed: float in 0..1)
incast.toml: flows[1].dst = 'h9': unknown host (allowed: h0, h1, h2)
incast.toml: 2 problem(s)
```

(A check that relates several keys is skipped while one of its keys has a problem of its own.)
Every other command reports what it cannot use the same way: one line naming the file,
folder, argument or key (`rdmasim run: error: argument --seed: ... (allowed: 0..9223372036854775807)`),
exit status 2. A traceback means a bug in rdmasim (`-v` adds one to any error, for a bug report).

Beyond the schema, a file is refused when an explicit topology has a link from a node to itself,
a host with no link or with two (a host has one port), or flows between hosts no links connect;
when a topology has more than 65,536 hosts or the generators would make more than 10,000,000
flows; when `outputs.formats` is `["parquet"]` and pyarrow is not installed (with `"csv"` also
listed it is a warning: no Parquet tables are written); and when `switch.buffer` is given smaller
than what the largest switch sets aside (reserve x 8 priorities + headroom x lossless priorities,
per port). When `switch.buffer` is not given it grows with the port count: 12 MB, or, when
reserve and headroom of the largest switch take more than 11 MB, those plus 1 MB shared.

`rdmasim validate` also warns (exit 0) about what would hold flows back without any error, such
as a NIC window (`nic.overrides.max_unacked_psns`) below the bandwidth-delay product of the paths
of the file's long flows, naming the value that lifts it (docs/nic-profiles.md); `rdmasim run`
ends its summary with the same warnings.

The scenario file and a size CDF file (`traffic.poisson.cdf`) are read only when they are regular
files of at most 32 MiB and 8 MiB: a device (`/dev/zero`), a named pipe or a directory is refused
at once, as is a larger file, naming the file, the key, the size found and the limit.

## How big a run is

`rdmasim validate` prints an estimate of the memory, the files and the time a run takes, and
refuses a file whose estimate exceeds the machine's memory (`--max-memory SIZE` sets another
limit) or whose files (capture, trace, tables) exceed the free space where they go (`[outputs]
dir`). `rdmasim run` checks the same before it starts, against the free space of `--out`:

```text
examples/incast.toml: ok; estimated memory 150 MB; ~344.544 µs simulated, ~4,096 events, ~0.0 s
capture.toml: ok; estimated memory 150 MB; writes ~220 MB (capture 220 MB); ~1.52 ms simulated, ...
```

The memory estimate adds up what grows with the input: the routing tables (2 bytes per
destination host and port of every switch, so a `fat_tree` of `k = 64` needs about 44 GB), about
2 KB per switch port, 8 KB per host and 2 KB per flow, the time series of
`outputs.sample_interval` (450 bytes per sampling step plus 32 bytes per flow sample, at most 10 M
samples) and the event trace (about 2 records per packet and hop, 192 bytes each while the run
holds them, at most the 2 million records a trace keeps: 384 MB).

The files: `capture.pcap` holds every frame once per link it crosses (the frame, or its first
`pcap_snaplen` bytes, plus 16 bytes of record header), so a capture of data crossing a leaf-spine
fabric is about 4 times the bytes sent; `outputs.pcap_snaplen = 128` keeps the headers only. The
trace file is about 10 bytes per record (compressed), the tables about 200 bytes per row.

The simulated time it assumes is the busiest host's bytes at line rate after the last flow starts
(the middle link's, if slower, on a `dumbbell`; half as long again on multi-path fabrics, where
flows share links; at most `simulation.duration`); runs slowed by loss, congestion or PFC take
longer and sample more. Events are about 1.4 per hop plus 1.2 per data packet, plus one per poll
of `switch.watchdog` (every `poll`) and of `switch.deadlock_check`: a poll looks at 8 queues of
every switch port, so a 1 ps poll makes a run of microseconds take seconds. The wall time is
about 0.15 µs per event plus 3 ns per event and host (the event loop slows as the fabric outgrows
the caches: about 3 µs per event with 1,000 hosts), 1.5 ms per host to build the fabric, and the
time to write a capture (5 ns per byte) or a trace (3.5 µs per record kept). These figures were
measured (`bench/estimate_calibration.py` compares the estimates with runs; each within 3x); a
busy machine is slower. An estimated wall time over an hour is a warning (for example a
`switch.deadlock_check` of 1 ps), not an error. `validate` also hands the flows to the simulator
as `run` does, so a flow it accepts is one the run accepts (for example a start time past
2^62 ps is refused by both, naming the flow).

## The results folder

Without `[outputs] dir` (and `--out`), a run writes into `results/<file name without .toml>`
(`results/incast` for `incast.toml`; a scenario given to `run_scenario` as text: `results/` and its
`simulation.name`, or `results/run`). That default is never replaced: when it holds an earlier run,
the run goes to the first free `results/incast-2`, `results/incast-3`, ... and `rdmasim run` says
so (`results: results/incast-2 (results/incast holds an earlier run)`). A folder you name
(`[outputs] dir` or `--out`) is yours: an earlier run there is replaced, and the output says that
too (`results: DIR (replaced the earlier run there)`).

A run writes its files into a hidden folder beside `[outputs] dir` (`.NAME.partial-PID-*`, PID
the process writing it) and moves it into place when every file is written: the folder holds one
run's results, whole. A folder that holds a previous run's results (it has `metadata.json`) is
replaced; a file, or a folder of other files, is refused before the run starts, as is a place that
cannot be written. A write that fails (a full disk) is reported as one line naming the file, and
leaves the folder as it was. A run killed outright (`kill -9`, the out-of-memory killer) leaves
its hidden folder behind: the next `rdmasim run` into the same folder removes those whose process
is no longer running and says so (`rdmasim run: removed .../.NAME.partial-4242-x1y2 (11.0 GB): the
unfinished results of process 4242, which is no longer running`), and `rdmasim validate` lists
them. Folders of a running process are left alone, as are those an older rdmasim left without a
pid in their name (`validate` names them; remove them by hand).

Ctrl-C during `rdmasim run` stops the simulation and writes the results so far: flows that had
not finished are `incomplete`, `metadata.json` has `"complete": false`, and the command says so
and exits with status 130. SIGTERM (`kill`, `timeout`, a batch scheduler's time limit) and SIGHUP
(the terminal closed) do the same, exiting with 143 and 129 (128 + the signal number) after
`rdmasim run: interrupted by SIGTERM at simulated time ...`; a SIGHUP ignored by `nohup` stays
ignored. A second signal while writing leaves the folder as it was. A Ctrl-C while the command is
still starting (loading its modules) prints `rdmasim: interrupted` and exits with 130.

This page is generated from `rdmasim/scenario/schema.py` by `python -m rdmasim.scenario.docs`.
"""


def _default(opt: Opt) -> str:
    d = opt.default
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, str):
        return f'`"{d}"`'
    return f"`{d}`".replace("'", '"')


def render() -> str:
    """The Markdown reference of every option."""
    out = [INTRO]
    for section, about in SECTIONS.items():
        title = section.replace("[]", "")
        header = f"[[{title}]]" if section.endswith("[]") else f"[{title}]"
        out.append(
            f"\n## `{header}`\n\n{about}\n\n| key | type | default | allowed | description |\n"
            "|---|---|---|---|---|"
        )
        prefix = section + "."
        for path, opt in SCHEMA.items():
            if not path.startswith(prefix) or "." in path[len(prefix) :]:
                continue
            key = path[len(prefix) :]
            allowed = opt.allowed().replace("|", "\\|")
            out.append(f"| `{key}` | {opt.kind} | {_default(opt)} | {allowed} | {opt.doc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
