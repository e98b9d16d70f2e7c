"""A static picture of a model's graph, drawn with Pillow: ``trustlayer show --png``.

The same layout and the same marks as the HTML report (:mod:`trustlayer.show.html`):
columns left to right, exemplar thumbnails, essential milestones in thick blue,
interruptions dashed, optional states pale, convergence points as amber diamonds,
negative milestones in red, phases as bands with their names.
"""
from __future__ import annotations

import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from trustlayer.graph_marks import START, SUCCESS
from trustlayer.judge.phases import phases
from trustlayer.model import Model
from trustlayer.show.layout import BACK_ARC_DROP, GAP_X, MARGIN, NODE_H, NODE_W, layout
from trustlayer.show.marks import (
    convergence_points,
    exemplar_image,
    readable_lines,
    state_kind,
    wrap,
)

INK, MUTED, LINE = (31, 35, 40), (89, 99, 110), (140, 149, 159)
BLUE, RED, GREEN, AMBER = (9, 105, 218), (207, 34, 46), (26, 127, 55), (191, 135, 0)
BANDS = [(246, 248, 250), (255, 251, 221)]
FILL = {"essential": (221, 244, 255), "negative": (255, 235, 233)}


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow built without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _bezier(start: tuple[float, float], end: tuple[float, float], bend: float,
            steps: int = 24) -> list[tuple[float, float]]:
    (x1, y1), (x2, y2) = start, end
    c1, c2 = (x1 + bend, y1), (x2 - bend, y2)
    points = []
    for i in range(steps + 1):
        t = i / steps
        a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3
        points.append((a * x1 + b * c1[0] + c * c2[0] + d * x2,
                       a * y1 + b * c1[1] + c * c2[1] + d * y2))
    return points


def _arrow_head(draw: ImageDraw.ImageDraw, tip: tuple[float, float],
                before: tuple[float, float], colour: tuple[int, int, int]) -> None:
    angle = math.atan2(tip[1] - before[1], tip[0] - before[0])
    left = (tip[0] - 9 * math.cos(angle - 0.45), tip[1] - 9 * math.sin(angle - 0.45))
    right = (tip[0] - 9 * math.cos(angle + 0.45), tip[1] - 9 * math.sin(angle + 0.45))
    draw.polygon([tip, left, right], fill=colour)


def _dashed_rectangle(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int],
                      colour: tuple[int, int, int], width: int, dash: int = 7) -> None:
    x0, y0, x1, y1 = box
    for x in range(x0, x1, dash * 2):
        draw.line([(x, y0), (min(x + dash, x1), y0)], fill=colour, width=width)
        draw.line([(x, y1), (min(x + dash, x1), y1)], fill=colour, width=width)
    for y in range(y0, y1, dash * 2):
        draw.line([(x0, y), (x0, min(y + dash, y1))], fill=colour, width=width)
        draw.line([(x1, y), (x1, min(y + dash, y1))], fill=colour, width=width)


def render_png(model: Model) -> Image.Image:
    """The model's graph as an RGB image."""
    placed = layout(list(model.states), [(e["source"], e["target"]) for e in model.edges],
                    model.essential, model.negative)
    image = Image.new("RGB", (placed.width, placed.height), "white")
    draw = ImageDraw.Draw(image)
    small, normal, bold = _font(10), _font(11), _font(13)
    bottom = placed.negative_row_y - 8 if placed.negative_row_y else placed.height - 10
    for phase in phases(model):
        start = placed.layer[phase.after] + 1 if phase.after else 1
        end = placed.layer[phase.milestone] if phase.milestone else \
            max(placed.layer[s] for s in phase.states)
        x0 = MARGIN + start * (NODE_W + GAP_X) - GAP_X // 2 + 4
        x1 = MARGIN + end * (NODE_W + GAP_X) + NODE_W + GAP_X // 2 - 4
        draw.rounded_rectangle((x0, 6, x1, bottom), 8, fill=BANDS[phase.index % 2])
        label = wrap(f"{phase.index + 1}: {phase.name}", max(8, (x1 - x0 - 16) // 8), 1)[0]
        draw.text((x0 + 8, 14), label, fill=MUTED, font=bold)
    total = max(len(model.training_runs), 1)
    runs = {(e["source"], e["target"]): e["runs"] for e in model.edges}
    mid = NODE_H // 2
    for source, target in placed.forward:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        start, end = (sx + NODE_W, sy + mid), (tx - 2, ty + mid)
        main = source in [START, *model.essential] and target in [*model.essential, SUCCESS]
        colour = BLUE if main else LINE
        points = _bezier(start, end, max((end[0] - start[0]) / 2, 20))
        draw.line(points, fill=colour, width=max(1, round(1 + 3 * runs[(source, target)] / total)),
                  joint="curve")
        _arrow_head(draw, points[-1], points[-3], colour)
    for source, target in placed.back:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        x1, y1, x2, y2 = sx + NODE_W // 2, sy + NODE_H, tx + NODE_W // 2, ty + NODE_H
        drop = min(18 + abs(x1 - x2) / 8, BACK_ARC_DROP)
        points = [(x1 + (x2 - x1) * t, max(y1, y2) + drop * math.sin(math.pi * t))
                  for t in (i / 20 for i in range(21))]
        points = [(x1, y1)] + points[1:-1] + [(x2, y2)]
        for a, b in list(zip(points, points[1:]))[::2]:
            draw.line([a, b], fill=LINE, width=1)
        _arrow_head(draw, points[-1], points[-2], LINE)
    converge = convergence_points(model)
    size = model.settings.thumbnail_size
    if placed.negative_row_y is not None:
        draw.text((MARGIN, placed.negative_row_y), "negative milestones: seen only in failed runs",
                  fill=RED, font=bold)
    for node, (x, y) in placed.position.items():
        if node in (START, SUCCESS):
            draw.rounded_rectangle((x, y + mid - 22, x + NODE_W, y + mid + 22), 22,
                                   fill=GREEN if node == SUCCESS else MUTED)
            draw.text((x + NODE_W // 2, y + mid), node, fill="white", font=bold, anchor="mm")
            continue
        kind = state_kind(model, node)
        state = model.states[node]
        outline = {"essential": BLUE, "soft": BLUE, "negative": RED}.get(kind, LINE)
        width = 4 if kind in ("essential", "negative") else 2
        draw.rounded_rectangle((x, y, x + NODE_W, y + NODE_H), 8,
                               fill=FILL.get(kind, (255, 255, 255)),
                               outline=None if kind == "soft" else outline, width=width)
        if kind == "soft":
            _dashed_rectangle(draw, (x, y, x + NODE_W, y + NODE_H), outline, 3)
        thumb = exemplar_image(state, size, (NODE_W - 16, 76))
        if thumb is not None:
            image.paste(thumb.convert("RGB"), (x + 8, y + 8))
        else:
            draw.rectangle((x + 8, y + 8, x + NODE_W - 8, y + 84), fill=(246, 248, 250))
            for row, line in enumerate(readable_lines(state.profile.salient_templates, 6)):
                draw.text((x + 11, y + 10 + row * 12), line[:22], fill=MUTED, font=small)
        for row, line in enumerate(wrap(state.name, 21, 3)):
            draw.text((x + NODE_W // 2, y + 100 + row * 14), line, anchor="ms",
                      fill=RED if kind == "negative" else INK, font=normal)
        if kind == "optional":  # pale: blend the node towards white
            box = (x, y, x + NODE_W + 1, y + NODE_H + 1)
            image.paste(Image.blend(image.crop(box), Image.new("RGB", (box[2] - x, box[3] - y),
                                                               "white"), 0.45), box[:2])
        if node in converge:
            draw.polygon([(x, y - 9), (x + 9, y), (x, y + 9), (x - 9, y)], fill=AMBER,
                         outline="white")
    return image


def save_png(model: Model, path: str | Path) -> None:
    """Draw the model's graph into the PNG file `path`."""
    render_png(model).save(path, format="PNG", optimize=True)
