"""A plot's legend lists the curves that have something to show in the window, and only those.

pyqtgraph keeps a hidden curve's entry and paints it as a crossed-out eye; a model that is not
loaded, or a figure its backend never reports, would fill the legend with those.
"""
from __future__ import annotations

import pyqtgraph as pg


def list_in_legend(plot: pg.PlotItem, curve: pg.PlotDataItem, label: str, listed: bool) -> None:
    legend = plot.legend
    if legend is None:
        return
    there = legend.getLabel(curve) is not None
    if listed and not there:
        legend.addItem(curve, label)
    elif there and not listed:
        legend.removeItem(curve)


def listed_labels(plot: pg.PlotItem) -> list[str]:
    """The legend's entries, in order (for tests and the screenshot check)."""
    legend = plot.legend
    return [] if legend is None else [label.text for _sample, label in legend.items]
