"""One self-contained HTML page that shows why trustlayer decided: ``trustlayer report``.

The page (Jinja2 templates in ``templates/``, autoescaped: nothing a run holds becomes
markup) holds, with every image embedded as a ``data:`` URI and no script at all:

* the learned model as a picture: the merged graph left to right (:mod:`trustlayer.show.layout`)
  with each state's exemplar, essential milestones highlighted, interruptions dashed,
  optional states dimmed, convergence points (where alternative routes meet) marked,
  negative milestones in red, and the phases (:mod:`trustlayer.judge.phases`) as bands;
* for each run, folded when it passed (a checkbox shows only the failed runs): its frames
  in order, grouped by phase, each with the model state it matched; for a failed run the
  divergence point, the missing milestone as successful runs showed it (a real frame when
  the training runs are given, else the model's thumbnail) beside what the run showed
  instead, the deciding lines as a word diff (``hello <del>world</del>`` /
  ``hello <ins>word</ins>``), the reason and the cause;
* folded, the equivalence decisions a person may doubt (an unsure pair, a visual match that
  only SSIM settled, a text match with tolerated lines, a near miss): both sides, the tier
  that decided and its evidence.
"""
from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from PIL import Image

from trustlayer.compare.equivalence import Decision, judge
from trustlayer.graph_marks import START, SUCCESS
from trustlayer.judge.explain import Frame, RunView
from trustlayer.judge.phases import Phase, phases
from trustlayer.model import Model
from trustlayer.observe.steps import Step
from trustlayer.observe.trace_events import Event, Run
from trustlayer.show.layout import (
    BACK_ARC_DROP,
    GAP_X,
    MARGIN,
    NODE_H,
    NODE_W,
    Layout,
    layout,
)
from trustlayer.show.marks import (
    SNIPPET_LINES,
    convergence_points,
    exemplar_image,
    readable_lines,
    state_kind,
    wrap,
)
from trustlayer.show.pixels import data_uri, full_resolution, pixel_diff, png_bytes
from trustlayer.show.textdiff import as_text, evidence_diff

FRAME_WIDTH = 180
COMPARE_WIDTH = 340  # expected, shown and their difference side by side


def frame_image(event: Event, width: int = FRAME_WIDTH) -> str | None:
    """The frame's screenshot, scaled to `width`, as a JPEG data URI (None without one)."""
    shot = event.observation.screenshot if event.observation else None
    if shot is None:
        return None
    with Image.open(io.BytesIO(shot.data)) as image:
        rgb = image.convert("RGB")
    rgb.thumbnail((width, width * 4))
    out = io.BytesIO()
    rgb.save(out, format="JPEG", quality=72)
    return data_uri(out.getvalue(), "image/jpeg")


def frame_text(event: Event, step: Step | None) -> list[str]:
    """What a text-only frame showed: its visible text, else its canonical lines."""
    text = event.observation.text if event.observation else None
    if text:
        return [line[:90] for line in text.splitlines() if line.strip()][:SNIPPET_LINES]
    return readable_lines(sorted(step.fingerprint.lines)) if step else []


# --------------------------------------------------------------------------- the graph

def _column_x(column: int) -> int:
    return MARGIN + column * (NODE_W + GAP_X)


def _phase_bands(placed: Layout, found: Sequence[Phase]) -> list[dict[str, Any]]:
    band_bottom = placed.negative_row_y - 8 if placed.negative_row_y else placed.height - 10
    bands = []
    for phase in found:
        start = placed.layer[phase.after] + 1 if phase.after else 1
        end = placed.layer[phase.milestone] if phase.milestone else \
            max(placed.layer[s] for s in phase.states)
        x0, x1 = _column_x(start) - GAP_X // 2 + 4, _column_x(end) + NODE_W + GAP_X // 2 - 4
        bands.append({"x": x0, "width": x1 - x0, "height": band_bottom - 6,
                      "parity": phase.index % 2,
                      "label": wrap(f"{phase.index + 1}: {phase.name}",
                                     max(8, (x1 - x0 - 16) // 8), 1)[0],
                      "title": f"phase {phase.index + 1}: {phase.name}"})
    return bands


def _node(model: Model, sid: str, x: int, y: int, converge: dict[str, int]) -> dict[str, Any]:
    state = model.states[sid]
    image = exemplar_image(state, model.settings.thumbnail_size, (NODE_W - 16, 76))
    return {"terminal": False, "x": x, "y": y, "kind": state_kind(model, sid),
            "tip": f"{state.name} ({sid}, {state_kind(model, sid)}; seen {len(state.members)} "
                   "times" + (f", cause {state.negative_cause}" if state.negative_cause else "")
                   + ")",
            "image": data_uri(png_bytes(image), "image/png") if image is not None else None,
            "snippet": [line[:24] for line in readable_lines(state.profile.salient_templates, 6)],
            "name_lines": wrap(state.name, 21, 3), "converge": converge.get(sid)}


def _edges(model: Model, placed: Layout) -> list[dict[str, Any]]:
    total = max(len(model.training_runs), 1)
    runs = {(e["source"], e["target"]): e for e in model.edges}
    mid, edges = NODE_H // 2, list[dict[str, Any]]()
    for source, target in placed.forward:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        x1, y1, x2, y2 = sx + NODE_W, sy + mid, tx - 2, ty + mid
        bend = max((x2 - x1) / 2, 20)
        edge = runs[(source, target)]
        actions = ", ".join(f"{a} ×{n}" for a, n in edge["actions"].items() if n)
        main = source in model.essential + [START] and target in model.essential + [SUCCESS]
        edges.append({"cls": "main" if main else "", "width": f"{1 + 3 * edge['runs'] / total:.1f}",
                      "d": f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}",
                      "title": f"{source} → {target}: {edge['runs']} of {total} runs"
                               + (f"; {actions}" if actions else "")})
    for source, target in placed.back:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        x1, y1, x2, y2 = sx + NODE_W // 2, sy + NODE_H, tx + NODE_W // 2, ty + NODE_H
        drop = min(18 + abs(x1 - x2) / 8, BACK_ARC_DROP)
        edges.append({"cls": "back", "width": None,
                      "d": f"M{x1},{y1} C{x1},{y1 + drop} {x2},{y2 + drop} {x2},{y2}",
                      "title": f"back to {model.name(target)} (a revisit)"})
    return edges


def graph_svg(model: Model) -> Markup:
    """The model's graph as inline SVG (no script, images as data URIs)."""
    placed = layout(list(model.states), [(e["source"], e["target"]) for e in model.edges],
                    model.essential, model.negative)
    converge = convergence_points(model)
    nodes = [{"terminal": True, "name": node, "x": x, "y": y} if node in (START, SUCCESS)
             else _node(model, node, x, y, converge)
             for node, (x, y) in placed.position.items()]
    graph = {"task": model.task, "width": placed.width, "height": placed.height,
             "bands": _phase_bands(placed, phases(model)), "edges": _edges(model, placed),
             "negative_row_y": placed.negative_row_y, "margin": MARGIN, "nodes": nodes,
             "node_w": NODE_W, "node_h": NODE_H}
    return Markup(TEMPLATES.get_template("graph.svg.j2").render(g=graph))


# --------------------------------------------------------------------------- HTML

TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("trustlayer.show", "templates"),
                               autoescape=True, trim_blocks=True, lstrip_blocks=True,
                               undefined=jinja2.StrictUndefined)


def _evidence_rows(decision: Decision) -> list[tuple[str, str]]:
    rows = []
    for key, value in decision.evidence.items():
        if isinstance(value, list):
            value = "; ".join(map(as_text, readable_lines(value, 8))) if value else "—"
        rows.append((str(key), str(value)))
    return rows


def _image_body(data_uri_text: str | None, thumbnail: bool = False) -> dict[str, Any]:
    return {"image": data_uri_text, "thumbnail": thumbnail}


def _frame_body(event: Event, step: Step | None, width: int = FRAME_WIDTH) -> dict[str, Any]:
    image = frame_image(event, width)
    return _image_body(image) if image else {"image": None, "text": frame_text(event, step)}


def _screenshot(event: Event | None) -> bytes | None:
    shot = event.observation.screenshot if event is not None and event.observation else None
    return shot.data if shot is not None else None


def _reference(model: Model, sid: str, references: dict[tuple[str, int], Event],
               like: Event | None = None) -> tuple[Event, str] | None:
    """A frame of a successful run in state `sid` from the reference runs, and its name:
    one whose screen has the size of `like`'s when there is one (a pixel diff then
    compares like with like)."""
    found = [(event, f"step {seq} of the successful run {run_id}")
             for run_id, seq in model.states[sid].members
             if (event := references.get((run_id, seq))) is not None and event.observation]
    size = _size(like)
    return next((pair for pair in found if size and _size(pair[0]) == size),
                found[0] if found else None)


def _size(event: Event | None) -> tuple[int, int] | None:
    shot = event.observation.screenshot if event is not None and event.observation else None
    return shot.gray().size if shot is not None else None


def _exemplar(model: Model, sid: str, reference: tuple[Event, str] | None,
              shape: tuple[int, int] | None) -> dict[str, Any]:
    """What a successful run showed in state `sid`: the `reference` frame when there is
    one (scaled, and at full resolution on click), else the stored thumbnail, else the
    state's salient lines."""
    state = model.states[sid]
    if reference is not None:
        event, name = reference
        return dict(_frame_body(event, None, COMPARE_WIDTH), note=name,
                    full=_full(_screenshot(event)))
    image = exemplar_image(state, model.settings.thumbnail_size, shape)
    if image is not None:
        return dict(_image_body(data_uri(png_bytes(image), "image/png"), thumbnail=True),
                    note=f"{model.settings.thumbnail_size}×{model.settings.thumbnail_size} "
                         "thumbnail kept in the model; give the training runs (--train) for "
                         "the real screen and the pixel difference")
    return {"image": None, "text": readable_lines(state.profile.salient_templates, 12),
            "note": None}


def _full(data: bytes | None) -> str | None:
    return full_resolution(data) if data is not None else None


def _shape(event: Event) -> tuple[int, int] | None:
    size = _size(event)
    if size is None:
        return None
    width, height = size
    return COMPARE_WIDTH, max(1, round(COMPARE_WIDTH * height / width))


def _difference(expected: bytes, shown: bytes) -> dict[str, Any]:
    """The pixel difference of two screens as a figure: scaled, and whole on click."""
    image, share = pixel_diff(expected, shown)
    scaled = image.copy()
    scaled.thumbnail((COMPARE_WIDTH, COMPARE_WIDTH * 4))
    return {"image": data_uri(png_bytes(scaled), "image/png"), "thumbnail": False,
            "full": data_uri(png_bytes(image), "image/png"), "note": None,
            "caption": f"difference: {share:.1%} of the pixels differ (red)"}


def _frame_view(model: Model, frame: Frame) -> dict[str, Any]:
    classes = ["frame"] + (["milestone"] if frame.milestone else []) + \
        (["unknown"] if not frame.ids else []) + (["diverged"] if frame.diverged else [])
    return {"seq": frame.seq, "classes": classes, "body": _frame_body(frame.event, frame.step),
            "diverged": frame.diverged,
            "milestone": model.name(frame.milestone) if frame.milestone else None,
            "matched": " / ".join(model.name(s) for s in frame.ids[:2]),
            "negative": model.name(frame.negative) if frame.negative else None,
            "novel": frame.novel[:5], "via": frame.via}


def _groups(model: Model, view: RunView, found: Sequence[Phase]) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = []
    for frame in view.frames:
        if not groups or groups[-1]["phase"] != frame.phase:
            name = f"phase {frame.phase + 1}: {found[frame.phase].name}" \
                if frame.phase < len(found) else "frames"
            groups.append({"phase": frame.phase, "name": name, "frames": []})
        groups[-1]["frames"].append(_frame_view(model, frame))
    return groups


def _divergence_view(model: Model, view: RunView,
                     references: dict[tuple[str, int], Event]) -> dict[str, Any] | None:
    if view.divergence is None:
        return None
    frame = view.frames[view.divergence]
    shape, shown = _shape(frame.event), _screenshot(frame.event)
    figures, decision, diff = [], None, []
    expected = _reference(model, view.missing, references, frame.event) if view.missing \
        else None
    if view.missing:
        figures.append(dict(_exemplar(model, view.missing, expected, shape),
                            caption=f"expected: '{model.name(view.missing)}' (as successful "
                                    "runs showed it)"))
    if frame.negative:
        figures.append(dict(_exemplar(model, frame.negative,
                                      _reference(model, frame.negative, references), shape),
                            caption=f"negative milestone '{model.name(frame.negative)}' (seen "
                                    "in failed runs)"))
    figures.append(dict(_frame_body(frame.event, frame.step, COMPARE_WIDTH), note=None,
                        full=_full(shown), caption=f"the run showed instead (step {frame.seq})"))
    expected_shot = _screenshot(expected[0]) if expected else None
    if expected_shot is not None and shown is not None:
        figures.append(_difference(expected_shot, shown))
    for number, figure in enumerate(figures):
        figure.setdefault("full", None)  # a thumbnail or text: nothing more to open
        figure["anchor"] = f"{view.run.run_id}-screen-{number}"
    if view.missing and frame.step is not None:
        judged = judge(model, frame.step.fingerprint, view.missing)
        decision = {"verdict": judged.verdict, "tier": judged.tier,
                    "evidence": _evidence_rows(judged)}
        diff = evidence_diff(judged, frame.novel)
    return {"figures": figures, "decision": decision, "diff": diff}


def _doubt_views(model: Model, view: RunView) -> list[dict[str, Any]]:
    doubts = []
    for frame, sid, decision, why in view.doubts:
        state = model.states[sid]
        image = exemplar_image(state, model.settings.thumbnail_size, (150, 94))
        doubts.append({"seq": frame.seq, "frame": _frame_body(frame.event, frame.step, 150),
                       "state": state.name, "verdict": decision.verdict, "tier": decision.tier,
                       "exemplar": data_uri(png_bytes(image), "image/png") if image else None,
                       "evidence": _evidence_rows(decision), "why": why})
    return doubts


def _run_view(model: Model, view: RunView, found: Sequence[Phase],
              references: dict[tuple[str, int], Event]) -> dict[str, Any]:
    status = view.status
    return {"run_id": view.run.run_id, "verdict": status.verdict or "fail",
            "coverage": f"{status.coverage:.0%}", "reason": status.reason or "",
            "step": status.step,
            "details": status.details or "",
            "cause": status.cause, "location": view.location, "warnings": status.warnings,
            "frames": len(view.frames), "groups": _groups(model, view, found),
            "divergence": _divergence_view(model, view, references),
            "doubts": _doubt_views(model, view)}


def _phase_rows(model: Model, found: Sequence[Phase]) -> list[dict[str, Any]]:
    return [{"number": phase.index + 1, "name": phase.name,
             "end": model.name(phase.milestone) if phase.milestone else "—",
             "states": [model.name(s) for s in phase.states[:8]], "more": len(phase.states) > 8}
            for phase in found]


def render_report(model: Model, views: Sequence[RunView] = (),
                  references: Sequence[Run] = ()) -> str:
    """The whole report page for `model` and the runs analysed in `views`; `references`
    (the training runs) give the expected states' real screens."""
    found = phases(model)
    frames = {(run.run_id, event.seq): event for run in references for event in run.events}
    runs = sorted((_run_view(model, view, found, frames) for view in views),
                  key=lambda run: run["verdict"] == "pass")  # the failed runs first
    causes = Counter((run["cause"] or "unknown").replace("_", " ") for run in runs
                     if run["verdict"] != "pass")
    return TEMPLATES.get_template("page.html.j2").render(
        model=model, graph=graph_svg(model), phases=_phase_rows(model, found), runs=runs,
        failed=[run for run in runs if run["divergence"]],
        passed=sum(run["verdict"] == "pass" for run in runs), causes=sorted(causes.items()),
        milestones=[(model.name(s), s in model.soft) for s in model.essential])


def write_report(model: Model, views: Sequence[RunView], path: str | Path,
                 references: Sequence[Run] = ()) -> None:
    """Write the report page to `path` (its folder made if missing)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(render_report(model, views, references), encoding="utf-8")
