"""Go-Back-N goodput collapse as i.i.d. loss grows (back-to-back 100 Gb/s, one long WRITE).

Runs ``examples/gbn_loss.toml`` for loss probabilities 0 .. 5 % (log-spaced) and a few seeds, and
draws goodput / line rate against loss together with

* Leung et al.'s Go-Back-N efficiency ``(1 - p) / (1 + (m - 1) p)`` (:func:`rdmasim.analytic.gbn_efficiency`)
  times the loss-free goodput, with ``m`` the pipe computed from the link parameters, and
* the same with RoCE's two extra costs of a *lost retransmission*: the responder NAKs a gap once, so
  recovery waits for the ACK timeout (:func:`rdmasim.analytic.retransmit_timeout_ps`) and the
  requester has resent a whole window (128 PSNs) by then. Of the ``N p / (1 - p)`` losses of new
  data about a fraction ``p`` have their retransmission lost too, and these idle timeouts are what
  make goodput collapse beyond ~1 % loss.

A point's goodput is the bytes of all its seeds over the sum of their completion times (the goodput
of the mean time, which is what the model predicts); the error bars span the single seeds.

The scenario file cannot select IRN (selective repeat), so the same fabric is also built with
:func:`rdmasim.scenario.build` and the same flow run through the bulk-flow API with
``recovery="irn"``, for contrast.

    python examples/gbn_loss.py [--out DIR] [--quick]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim import analytic
from rdmasim.scenario import Scenario, build, run_scenario

NAME = "gbn_loss"
DESCRIPTION = "Go-Back-N goodput collapse as i.i.d. loss grows (back-to-back 100 Gb/s, one long WRITE)."
LOSS_KEY = "impairments.loss[0].probability"
#: an RC QP has at most this many unacknowledged PSNs in flight (rxe's limit, as in the core)
WINDOW_PSNS = 128
#: bytes on the wire around the payload of a RoCEv2 data packet: Ethernet 14, IPv4 20, UDP 8, BTH 12,
#: ICRC 4, FCS 4, preamble + inter-frame gap 20
DATA_OVERHEAD = 14 + 20 + 8 + 12 + 4 + 4 + 20
#: an ACK: the same headers plus the 4-byte AETH and no payload
ACK_WIRE = DATA_OVERHEAD + 4


def pipe_packets(rate_bps: float, delay_ps: int, mtu: int) -> int:
    """Packets Go-Back-N resends for one isolated loss: the lost one and all sent before its NAK is back.

    The NAK is triggered by the next packet's arrival, so it returns ``2 serialisations + ACK
    serialisation + 2 delays`` after the lost packet started; the packet then on the wire completes.
    """
    ser_s = (mtu + DATA_OVERHEAD) * 8 / rate_bps
    nak_s = 2 * ser_s + ACK_WIRE * 8 / rate_bps + 2 * delay_ps * 1e-12
    return math.ceil(nak_s / ser_s)


def models(sc: Scenario, losses: np.ndarray, goodput0: float) -> dict[str, np.ndarray]:
    """Goodput / line rate predicted for ``losses``, from the loss-free goodput ``goodput0``.

    ``leung``: goodput0 x gbn_efficiency(p, m). ``roce``: the time of the loss-free transfer divided by
    the efficiency with m_eff = m + p (W - m), plus N p^2 / (1 - p) ACK timeouts of idle time.
    """
    v = sc.values
    rate, delay, mtu = float(v["link.rate"]), int(v["link.delay"]), int(v["qp.mtu"])
    size = int(sc.arrays["flows"][0]["size"])
    m = pipe_packets(rate, delay, mtu)
    n_pkts = size / mtu
    t0_s = size * 8 / (goodput0 * rate)
    rto_s = analytic.retransmit_timeout_ps(int(v["qp.timeout"])) * 1e-12
    leung, roce = [], []
    for p in losses:
        leung.append(goodput0 * analytic.gbn_efficiency(p, m))
        m_eff = m + p * (WINDOW_PSNS - m)
        t_s = t0_s / analytic.gbn_efficiency(p, m_eff) + n_pkts * p * p / (1 - p) * rto_s
        roce.append(size * 8 / t_s / rate)
    return {"m": np.array(m), "leung": np.array(leung), "roce": np.array(roce)}


def goodput_gbn(sc: Scenario) -> tuple[float, int]:
    """Goodput / line rate of the scenario's single flow (Go-Back-N, as the file says), retransmissions."""
    res = run_scenario(sc, "", progress=False)
    f = res.flows[0]
    if f.fct_ps is None:
        return 0.0, int(f.retx_pkts)
    return f.size_bytes * 8 / (f.fct_ps * 1e-12) / float(sc.values["link.rate"]), int(f.retx_pkts)


def goodput_irn(sc: Scenario) -> tuple[float, int]:
    """The same flow on the same fabric with IRN selective repeat (bulk-flow API)."""
    sim = build(sc)
    fs = sim.add_flows(c.scenario_flows(sc), mtu=sc.values["qp.mtu"], timeout=sc.values["qp.timeout"],
                       recovery="irn")
    sim.run_flows(until=sc.values["simulation.duration"])
    r = fs.results()[0]
    if r["fct_ps"] < 0:
        return 0.0, int(r["retx_pkts"])
    rate = float(sc.values["link.rate"])
    return int(r["size_bytes"]) * 8 / (int(r["fct_ps"]) * 1e-12) / rate, int(r["retx_pkts"])


def pooled(goodputs: np.ndarray) -> np.ndarray:
    """Per row (loss), the goodput of all seeds together: equal sizes, so the harmonic mean."""
    with np.errstate(divide="ignore"):
        return np.where((goodputs > 0).all(axis=1), goodputs.shape[1] / (1 / goodputs).sum(axis=1), 0.0)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the loss sweep, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)
    if args.quick:
        losses = np.array([0.0, 1e-3, 1e-2, 5e-2])
        seeds, size = [1], "2MiB"
    else:
        losses = np.concatenate([[0.0], np.geomspace(1e-4, 5e-2, 10)])
        seeds, size = list(range(1, 11)), "16MiB"
    gbn = np.zeros((len(losses), len(seeds)))
    irn = np.zeros_like(gbn)
    retx = np.zeros_like(gbn)
    for i, p in enumerate(losses):
        for j, seed in enumerate(seeds):
            sc = c.scenario(NAME, {LOSS_KEY: float(p), "simulation.seed": seed, "flows[0].size": size})
            gbn[i, j], retx[i, j] = goodput_gbn(sc)
            irn[i, j], _ = goodput_irn(sc)
    g_mean, irn_mean = pooled(gbn), pooled(irn)
    base = c.scenario(NAME, {"flows[0].size": size})
    model = models(base, losses, float(g_mean[0]))

    print(f"Go-Back-N, one {size} WRITE, 100 Gb/s back to back, pipe m = {int(model['m'])} packets, "
          f"{len(seeds)} seed(s) per point")
    print(c.table(["loss", "GBN goodput", "min", "max", "retx pkts", "Leung", "with timeouts", "IRN"],
                  [(float(p), float(g_mean[i]), float(gbn[i].min()), float(gbn[i].max()),
                    float(retx[i].mean()), float(model["leung"][i]), float(model["roce"][i]),
                    float(irn_mean[i]))
                   for i, p in enumerate(losses)]))

    fig, (ax,) = c.figure(size=(7.0, 4.3))
    lossy = losses > 0
    x = losses[lossy]
    grid = np.geomspace(float(x.min()), float(x.max()), 200)
    curves = models(base, grid, float(g_mean[0]))
    ax.axhline(float(g_mean[0]), color="grey", lw=0.8, ls=":", label="no loss (header-limited)")
    ax.plot(grid, curves["leung"], "--", color="tab:blue",
            label=f"Leung: $(1-p)/(1+(m-1)p)$, m = {int(model['m'])}")
    ax.plot(grid, curves["roce"], "-", color="tab:red", lw=1,
            label="+ lost retransmissions (window, timeout)")
    yerr = np.vstack([g_mean - gbn.min(axis=1), gbn.max(axis=1) - g_mean])[:, lossy]
    ax.errorbar(x, g_mean[lossy], yerr=yerr, fmt="o", color="black", capsize=3, label="rdmasim, Go-Back-N")
    ax.plot(x, irn_mean[lossy], "s", mfc="none", color="tab:green", label="rdmasim, IRN (Python API)")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("i.i.d. loss probability (a → b)")
    ax.set_ylabel("goodput / line rate")
    ax.set_title(f"Go-Back-N goodput vs loss: {size} WRITE, 100 Gb/s, 1 µs, MTU 1024", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower left")
    paths = c.save(fig, args.out, NAME)
    return {"loss": losses.tolist(), "goodput": g_mean.tolist(), "goodput_min": gbn.min(axis=1).tolist(),
            "goodput_max": gbn.max(axis=1).tolist(), "irn_goodput": irn_mean.tolist(),
            "leung": model["leung"].tolist(), "model": model["roce"].tolist(), "pipe": int(model["m"]),
            "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
