"""A static picture of a model's graph: ``trustlayer show --png``.

The report's own drawing (:func:`trustlayer.show.html.graph_svg`, styled by
``templates/graph.css``) rendered by resvg, a maintained SVG rasteriser: one drawing for the
page and the picture, with smooth edges and text.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import resvg_py

from trustlayer.model import Model
from trustlayer.show.html import graph_svg

GRAPH_CSS = files("trustlayer.show").joinpath("templates").joinpath("graph.css")


def render_png(model: Model) -> bytes:
    """The model's graph as PNG bytes, on white."""
    return bytes(resvg_py.svg_to_bytes(svg_string=str(graph_svg(model)),
                                       style_sheet=GRAPH_CSS.read_text(encoding="utf-8"),
                                       background="#ffffff"))


def save_png(model: Model, path: str | Path) -> None:
    """Draw the model's graph into the PNG file `path`."""
    Path(path).write_bytes(render_png(model))
