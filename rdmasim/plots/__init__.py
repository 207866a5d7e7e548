"""Plots of rdmasim results: FCT slowdown, goodput, queues and pauses, DCQCN rates, collectives,
a sweep's metric against its parameter.

Every table input may be a pandas DataFrame, a numpy structured array, a dict of columns or a list
of row dicts (:func:`as_columns`). Each plot returns a :class:`matplotlib.figure.Figure` on an Agg
canvas (no pyplot state) with the numbers it draws in ``fig.rdmasim_data``; :func:`save` writes it.
"""

from __future__ import annotations

from rdmasim.plots._common import as_columns, time_unit
from rdmasim.plots._save import save
from rdmasim.plots.collective import collective_stats, collective_time
from rdmasim.plots.fct import (
    CLASSIC_BUCKETS,
    bucket_edges,
    fct_slowdown_by_size,
    finished_mask,
    slowdown_buckets,
    summary_table,
)
from rdmasim.plots.psn import psn_over_time, psn_series
from rdmasim.plots.queues import pause_spans, queue_timeline
from rdmasim.plots.series import dcqcn_rates, goodput, goodput_over_time
from rdmasim.plots.sweep import sweep_metric

__all__ = [
    "CLASSIC_BUCKETS",
    "as_columns",
    "bucket_edges",
    "collective_stats",
    "collective_time",
    "dcqcn_rates",
    "fct_slowdown_by_size",
    "finished_mask",
    "goodput",
    "goodput_over_time",
    "pause_spans",
    "psn_over_time",
    "psn_series",
    "queue_timeline",
    "save",
    "slowdown_buckets",
    "summary_table",
    "sweep_metric",
    "time_unit",
]
