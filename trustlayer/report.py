"""One self-contained HTML page that shows why trustlayer decided: ``trustlayer report``.

The page holds, with every image embedded as a ``data:`` URI and no script at all:

* the learned model as a picture: the merged graph left to right (:mod:`trustlayer.layout`)
  with each state's exemplar, essential milestones highlighted, interruptions dashed,
  optional states dimmed, convergence points (where alternative routes meet) marked,
  negative milestones in red, and the phases (:mod:`trustlayer.phases`) as bands;
* for each run: its frames in order, grouped by phase, each with the model state it
  matched; for a failed run the divergence point, the missing milestone's exemplar beside
  what the run showed instead, the reason and the cause;
* the equivalence decisions a person may doubt (an unsure pair, a visual match that only
  SSIM settled, a text match with tolerated lines, a near miss): both sides, the tier that
  decided and its evidence.
"""
from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from PIL import Image

from trustlayer.dominators import START, SUCCESS
from trustlayer.equivalence import Decision, judge
from trustlayer.index import StateIndex
from trustlayer.layout import BACK_ARC_DROP, GAP_X, MARGIN, NODE_H, NODE_W, Layout, layout
from trustlayer.llm import LLMJudge
from trustlayer.matcher import FAILED, Matcher, Status
from trustlayer.model import Model, ModelState
from trustlayer.phases import Phase, frame_phases, phases, where
from trustlayer.steps import Step, run_steps
from trustlayer.traces import Event, Run

FRAME_WIDTH = 180
MAX_DOUBTS = 6
SNIPPET_LINES = 7
LINE_PREFERENCE = {"X": 0, "F": 1, "A": 2, "T": 3, "U": 4}


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def exemplar_image(state: ModelState, size: int, shape: tuple[int, int] | None = None,
                   index: int = 0) -> Image.Image | None:
    """A state's stored grayscale thumbnail, stretched to `shape` (width, height)."""
    if len(state.thumbnails) <= index:
        return None
    image = Image.frombytes("L", (size, size), state.thumbnails[index])
    return image.resize(shape or (size * 2, size * 2), Image.Resampling.BICUBIC)


def readable_lines(lines: Sequence[str], limit: int = SNIPPET_LINES) -> list[str]:
    """Canonical lines (``X|...``) as a person reads them: visible text first, then what
    changed in the files, then accessibility lines; a file merely existing or unchanged,
    and content digests, left out.

    >>> readable_lines(["A|- button \\"Save\\"", "X|hello world", "F|content a.py 1f2e",
    ...                 "F|exists a.py", "F|added b.py"])
    ['hello world', 'added b.py', '- button "Save"']
    """
    kept = [line for line in lines
            if not line.startswith(("F|content ", "F|exists ", "F|unchanged "))]
    kept.sort(key=lambda line: (LINE_PREFERENCE.get(line[:1], 5), line))
    return [line.partition("|")[2] for line in kept[:limit]]


def frame_image(event: Event, width: int = FRAME_WIDTH) -> str | None:
    """The frame's screenshot, scaled to `width`, as a JPEG data URI (None without one)."""
    shot = event.observation.screenshot if event.observation else None
    if shot is None:
        return None
    with Image.open(io.BytesIO(shot.data)) as image:
        image = image.convert("RGB")
        image.thumbnail((width, width * 4))
        out = io.BytesIO()
        image.save(out, format="JPEG", quality=72)
    return data_uri(out.getvalue(), "image/jpeg")


def frame_text(event: Event, step: Step | None) -> list[str]:
    """What a text-only frame showed: its visible text, else its canonical lines."""
    text = event.observation.text if event.observation else None
    if text:
        return [line[:90] for line in text.splitlines() if line.strip()][:SNIPPET_LINES]
    return readable_lines(sorted(step.fingerprint.lines)) if step else []


# --------------------------------------------------------------------------- the graph

def _wrap(name: str, width: int = 21, lines: int = 2) -> list[str]:
    words, out, current = name.split(), [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    out.append(current)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1] + "…"
    return [line[:width] if len(line) <= width else line[: width - 1] + "…" for line in out]


def convergence_points(model: Model) -> dict[str, int]:
    """States where routes of successful runs meet again (the model's own list where it
    records one, else states entered from two or more states): ``state id -> number of
    states it is entered from``."""
    sources: dict[str, set[str]] = {}
    for edge in model.edges:
        sources.setdefault(edge["target"], set()).add(edge["source"])
    learned = getattr(model, "convergence", None)
    ids = learned if learned else [sid for sid, found in sources.items() if len(found) >= 2]
    return {sid: len(sources.get(sid, ())) for sid in ids if sid in model.states}


def state_kind(model: Model, state_id: str) -> str:
    if state_id in model.negative:
        return "negative"
    if state_id in model.soft:
        return "soft"
    if state_id in model.essential:
        return "essential"
    return "optional"


def _column_x(column: int) -> int:
    return MARGIN + column * (NODE_W + GAP_X)


def _phase_bands(model: Model, placed: Layout, found: Sequence[Phase]) -> list[str]:
    parts = []
    band_bottom = placed.negative_row_y - 8 if placed.negative_row_y else placed.height - 10
    for phase in found:
        start = placed.layer[phase.after] + 1 if phase.after else 1
        end = placed.layer[phase.milestone] if phase.milestone else \
            max(placed.layer[s] for s in phase.states)
        x0, x1 = _column_x(start) - GAP_X // 2 + 4, _column_x(end) + NODE_W + GAP_X // 2 - 4
        parts.append(f'<rect class="band band{phase.index % 2}" x="{x0}" y="6" '
                     f'width="{x1 - x0}" height="{band_bottom - 6}" rx="8"/>')
        label = _wrap(f"{phase.index + 1}: {phase.name}", max(8, (x1 - x0 - 16) // 8), 1)[0]
        parts.append(f'<text class="band-label" x="{x0 + 8}" y="26">{html.escape(label)}<title>phase {phase.index + 1}: '
                     f'{html.escape(phase.name)}</title></text>')
    return parts


def _node_svg(model: Model, sid: str, x: int, y: int, converge: dict[str, int]) -> str:
    state = model.states[sid]
    kind = state_kind(model, sid)
    size = model.settings.thumbnail_size
    tip = (f"{state.name} ({sid}, {kind}; seen {len(state.members)} times"
           + (f", cause {state.negative_cause}" if state.negative_cause else "") + ")")
    parts = [f'<g class="node {kind}" transform="translate({x},{y})">',
             f"<title>{html.escape(tip)}</title>",
             f'<rect class="box" width="{NODE_W}" height="{NODE_H}" rx="8"/>']
    image = exemplar_image(state, size, (NODE_W - 16, 76))
    if image is not None:
        parts.append(f'<image x="8" y="8" width="{NODE_W - 16}" height="76" '
                     f'href="{data_uri(_png(image), "image/png")}"/>')
    else:
        parts.append(f'<rect class="snippet" x="8" y="8" width="{NODE_W - 16}" height="76"/>')
        for row, line in enumerate(readable_lines(state.profile.salient_templates, 6)):
            parts.append(f'<text class="mono" x="12" y="{20 + row * 12}">'
                         f'{html.escape(line[:24])}</text>')
    for row, line in enumerate(_wrap(state.name, 21, 3)):
        parts.append(f'<text class="name" x="{NODE_W // 2}" y="{100 + row * 14}">'
                     f"{html.escape(line)}</text>")
    if sid in converge:
        parts.append(f'<g class="converge"><title>convergence point: {converge[sid]} routes '
                     f'meet here</title><path d="M0,-9 L9,0 L0,9 L-9,0 Z"/></g>')
    parts.append("</g>")
    return "".join(parts)


def _terminal_svg(node: str, x: int, y: int) -> str:
    return (f'<g class="terminal {node.lower()}" transform="translate({x},{y})">'
            f'<rect width="{NODE_W}" height="44" y="{NODE_H // 2 - 22}" rx="22"/>'
            f'<text x="{NODE_W // 2}" y="{NODE_H // 2 + 5}">{node}</text></g>')


def graph_svg(model: Model) -> str:
    """The model's graph as inline SVG (no script, images as data URIs)."""
    placed = layout(list(model.states), [(e["source"], e["target"]) for e in model.edges],
                    model.essential, model.negative)
    converge = convergence_points(model)
    total = max(len(model.training_runs), 1)
    runs = {(e["source"], e["target"]): e for e in model.edges}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{placed.width}" '
             f'height="{placed.height}" viewBox="0 0 {placed.width} {placed.height}" '
             f'role="img" aria-label="learned model of {html.escape(model.task)}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/>'
             "</marker></defs>"]
    parts += _phase_bands(model, placed, phases(model))
    mid = NODE_H // 2
    for source, target in placed.forward:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        x1, y1, x2, y2 = sx + NODE_W, sy + mid, tx - 2, ty + mid
        bend = max((x2 - x1) / 2, 20)
        edge = runs[(source, target)]
        width = 1 + 3 * edge["runs"] / total
        actions = ", ".join(f"{a} ×{n}" for a, n in edge["actions"].items() if n)
        main = "main" if source in model.essential + [START] and \
            target in model.essential + [SUCCESS] else ""
        parts.append(f'<path class="edge {main}" stroke-width="{width:.1f}" '
                     f'd="M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}" '
                     f'marker-end="url(#arrow)"><title>{html.escape(source)} → '
                     f'{html.escape(target)}: {edge["runs"]} of {total} runs'
                     f'{"; " + html.escape(actions) if actions else ""}</title></path>')
    for source, target in placed.back:
        (sx, sy), (tx, ty) = placed.position[source], placed.position[target]
        x1, y1, x2, y2 = sx + NODE_W // 2, sy + NODE_H, tx + NODE_W // 2, ty + NODE_H
        drop = min(18 + abs(x1 - x2) / 8, BACK_ARC_DROP)
        parts.append(f'<path class="edge back" d="M{x1},{y1} C{x1},{y1 + drop} {x2},'
                     f'{y2 + drop} {x2},{y2}" marker-end="url(#arrow)"><title>back to '
                     f'{html.escape(model.name(target))} (a revisit)</title></path>')
    if placed.negative_row_y is not None:
        parts.append(f'<text class="band-label negative-label" x="{MARGIN}" '
                     f'y="{placed.negative_row_y + 12}">negative milestones: seen only in '
                     f"failed runs</text>")
    for node, (x, y) in placed.position.items():
        parts.append(_terminal_svg(node, x, y) if node in (START, SUCCESS)
                     else _node_svg(model, node, x, y, converge))
    parts.append("</svg>")
    return "\n".join(parts)


# --------------------------------------------------------------------------- the runs

@dataclass
class Frame:
    """One observed state of a run, as the report shows it."""

    seq: int
    event: Event
    step: Step | None
    ids: list[str]
    via: list[str]
    novel: list[str]
    phase: int
    milestone: str | None = None
    diverged: bool = False
    negative: str | None = None


@dataclass
class RunView:
    """What the report shows of one run."""

    run: Run
    status: Status
    frames: list[Frame]
    divergence: int | None = None
    missing: str | None = None
    location: str = ""
    doubts: list[tuple[Frame, str, Decision, str]] = field(default_factory=list)


def _divergence(model: Model, frames: Sequence[Frame], status: Status,
                found: Sequence[Phase]) -> int | None:
    """Index of the frame where a failed run left what successful runs do: after the last
    milestone it reached, the first frame that is neither that state again nor one that
    successful runs go to next; a negative milestone's frame; else the last frame."""
    if status.status != FAILED or not frames:
        return None
    if status.reason and status.reason.startswith("negative milestone"):
        return next((i for i, f in enumerate(frames) if f.seq == status.detected_at_seq),
                    len(frames) - 1)
    reached = {sid for sid in model.essential if model.name(sid) in status.matched}
    last = max((i for i, f in enumerate(frames) if reached & set(f.ids)), default=-1)
    known = set(frames[last].ids) if last >= 0 else None
    for index in range(last + 1, len(frames)):
        ids = set(frames[index].ids)
        expected = (known | set().union(*(model.successors(s) for s in known))) if known \
            else set(found[0].states) if found else set()
        if not ids & expected:
            return index
        known = ids
    return len(frames) - 1


def _doubt(decision: Decision, settings: Any) -> str | None:
    """Why a person may doubt this decision, or None when it is clear-cut."""
    evidence = decision.evidence
    if decision.verdict == "unsure":
        return "the tiers were unsure (without the LLM tier, unsure counts as different)"
    if decision.tier == "ssim" and decision.same:
        return "the perceptual hashes disagreed; SSIM on the thumbnails decided"
    if decision.tier == "phash" and decision.same and \
            evidence.get("phash_distance", 0) >= settings.phash_same:
        return "the perceptual hashes are at the edge of 'same'"
    if decision.tier == "structure" and decision.same and evidence.get("unexplained"):
        return "same, with lines no template explains (tolerated)"
    if decision.tier == "structure" and not decision.same and \
            len(evidence.get("missing", [])) == 1 and len(evidence.get("unexplained", [])) <= 2:
        return "different by a single expected line: a near miss"
    return None


def analyse_run(model: Model, run: Run, index: StateIndex | None = None,
                llm: LLMJudge | None = None) -> RunView:
    """Judge `run` with the matcher (as ``validate`` does, with the LLM tier when the model
    enables it) and gather what the report shows of it."""
    matcher = Matcher(model, llm)
    for event in run.events:
        matcher.feed(event)
    if run.end is None:
        matcher.close(run.events[-1].seq)
    status = matcher.status
    steps = {step.seq: step for step in run_steps(run, model.settings)}
    events = {event.seq: event for event in run.events}
    found = phases(model)
    in_phase = frame_phases(model, matcher.history)
    frames = []
    for entry, phase in zip(matcher.history, in_phase):
        milestone = next((sid for sid in entry["ids"] if sid in model.essential), None)
        frames.append(Frame(entry["seq"], events[entry["seq"]], steps.get(entry["seq"]),
                            list(entry["ids"]), list(entry["via"]), list(entry["novel"]),
                            phase, milestone))
    view = RunView(run, status, frames)
    view.divergence = _divergence(model, frames, status, found)
    if view.divergence is not None:
        frame = frames[view.divergence]
        frame.diverged = True
        if frame.step is not None:
            frame.negative = next((sid for sid in model.negative
                                   if judge(model, frame.step.fingerprint, sid).same), None)
        by_name = {model.name(sid): sid for sid in model.states}
        view.missing = by_name.get(status.missing[0]) if status.missing else None
        view.location = where(model, view.missing) if view.missing else ""
    index = index or StateIndex(model)
    seen: set[tuple[str, str]] = set()
    for frame in frames:
        if frame.step is None:
            continue
        for sid in sorted(index.candidates(frame.step.fingerprint)):
            decision = judge(model, frame.step.fingerprint, sid)
            why = _doubt(decision, model.settings)
            key = (frame.step.fingerprint.image_sha or str(sorted(frame.step.fingerprint.lines)),
                   sid)
            if why and key not in seen:
                seen.add(key)
                view.doubts.append((frame, sid, decision, why))
    view.doubts.sort(key=lambda d: (d[2].verdict != "unsure", d[0].seq))
    del view.doubts[MAX_DOUBTS:]
    return view


# --------------------------------------------------------------------------- HTML

CSS = """
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --blue:#0969da; --red:#cf222e;
  --green:#1a7f37; --amber:#9a6700; --bg:#ffffff; --soft:#f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
  margin: 0; background: var(--bg); }
header, section { padding: 16px 28px; }
header { border-bottom: 1px solid var(--line); background: var(--soft); }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 18px 0 8px; }
h3 { font-size: 16px; margin: 0 0 6px; } .muted { color: var(--muted); }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 8px 0; color: var(--muted); }
.legend span::before { content: ""; display: inline-block; width: 14px; height: 10px;
  margin-right: 5px; border-radius: 3px; vertical-align: middle; border: 2px solid var(--line); }
.legend .l-essential::before { border-color: var(--blue); background: #ddf4ff; }
.legend .l-soft::before { border: 2px dashed var(--blue); }
.legend .l-optional::before { opacity: .5; }
.legend .l-negative::before { border-color: var(--red); background: #ffebe9; }
.legend .l-converge::before { background: #bf8700; border-color: #bf8700; transform: rotate(45deg);
  width: 9px; height: 9px; }
svg.graph text { font: 11px system-ui, sans-serif; fill: var(--ink); }
svg.graph .name { text-anchor: middle; font-weight: 600; }
svg.graph .mono { font: 9px ui-monospace, monospace; fill: var(--muted); }
svg.graph .box { fill: #fff; stroke: #8c959f; stroke-width: 1.5; }
svg.graph .snippet { fill: var(--soft); stroke: none; }
svg.graph .essential .box { stroke: var(--blue); stroke-width: 3.5; fill: #ddf4ff; }
svg.graph .soft .box { stroke: var(--blue); stroke-width: 2.5; stroke-dasharray: 6 4; }
svg.graph .optional { opacity: .5; }
svg.graph .negative .box { stroke: var(--red); stroke-width: 3.5; fill: #ffebe9; }
svg.graph .negative .name { fill: var(--red); }
svg.graph .converge path { fill: #bf8700; stroke: #fff; stroke-width: 1.5; }
svg.graph .edge { fill: none; stroke: #8c959f; }
svg.graph .edge.main { stroke: var(--blue); }
svg.graph .edge.back { stroke-dasharray: 4 4; stroke-width: 1.2; }
svg.graph marker path { fill: #8c959f; }
svg.graph .terminal rect { fill: #57606a; } svg.graph .terminal.success rect { fill: var(--green); }
svg.graph .terminal text { fill: #fff; font-weight: 700; text-anchor: middle; font-size: 13px; }
svg.graph .band0 { fill: #f6f8fa; } svg.graph .band1 { fill: #fff8c5; opacity: .55; }
svg.graph .band-label { font-weight: 700; fill: var(--muted); font-size: 12px; }
svg.graph .negative-label { fill: var(--red); }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); }
.run { border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin: 14px 0; }
.run.fail { border-left: 6px solid var(--red); } .run.pass { border-left: 6px solid var(--green); }
.verdict { font-weight: 700; padding: 1px 8px; border-radius: 10px; color: #fff; }
.verdict.fail { background: var(--red); } .verdict.pass { background: var(--green); }
.reason { margin: 4px 0; } .cause { font-weight: 600; }
.timeline { display: flex; flex-wrap: wrap; gap: 10px; padding: 6px 2px 10px; }
.phase { border: 1px solid var(--line); border-radius: 8px; padding: 6px; background: var(--soft);
  flex: none; }
.phase > .phase-name { font-weight: 700; color: var(--muted); margin-bottom: 4px; font-size: 12px; }
.frames { display: flex; flex-wrap: wrap; gap: 8px; }
figure { margin: 0; } .frame { width: 188px; background: #fff; border: 2px solid var(--line);
  border-radius: 6px; padding: 3px; flex: none; }
.frame img { width: 100%; display: block; border-radius: 3px; }
.frame figcaption { font-size: 11px; color: var(--muted); margin-top: 3px; }
.frame.milestone { border-color: var(--blue); } .frame.unknown { border-style: dashed;
  border-color: #bf8700; } .frame.diverged { border: 3px solid var(--red); }
.frame .badge { display: inline-block; font-weight: 700; color: #fff; background: var(--blue);
  border-radius: 8px; padding: 0 6px; margin-right: 4px; }
.frame.diverged .badge.div, .frame .badge.neg { background: var(--red); }
pre.text { font: 10px/1.3 ui-monospace, monospace; background: var(--soft); margin: 0; padding: 4px;
  white-space: pre-wrap; word-break: break-word; max-height: 150px; overflow: hidden; }
.compare { display: flex; gap: 18px; align-items: flex-start; flex-wrap: wrap; margin: 8px 0; }
.compare figure { max-width: 360px; } .compare img { max-width: 340px; border: 1px solid var(--line); }
.compare figcaption { font-weight: 600; margin-bottom: 4px; }
.evidence { font: 12px ui-monospace, monospace; }
.doubts img { width: 150px; display: block; }
.ok { color: var(--green); font-weight: 700; } .bad { color: var(--red); font-weight: 700; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _evidence(decision: Decision) -> str:
    rows = []
    for key, value in decision.evidence.items():
        if isinstance(value, list):
            value = "; ".join(readable_lines(value, 8)) if value else "—"
        rows.append(f"<b>{_e(key)}</b>: {_e(value)}")
    return "<br>".join(rows) or "—"


def _state_figure(model: Model, sid: str, shape: tuple[int, int] | None, caption: str) -> str:
    state = model.states[sid]
    image = exemplar_image(state, model.settings.thumbnail_size, shape)
    body = (f'<img alt="exemplar of {_e(state.name)}" src="{data_uri(_png(image), "image/png")}">'
            if image is not None else
            f'<pre class="text">{_e(chr(10).join(readable_lines(state.profile.salient_templates, 12)))}</pre>')
    return f"<figure><figcaption>{caption}</figcaption>{body}</figure>"


def _frame_body(frame: Frame, width: int = FRAME_WIDTH) -> str:
    image = frame_image(frame.event, width)
    if image:
        return f'<img alt="frame {frame.seq}" src="{image}">'
    return f'<pre class="text">{_e(chr(10).join(frame_text(frame.event, frame.step)))}</pre>'


def _shape(frame: Frame) -> tuple[int, int] | None:
    shot = frame.event.observation.screenshot if frame.event.observation else None
    if shot is None:
        return None
    width, height = shot.gray().size
    return 340, max(1, round(340 * height / width))


def _frame_html(model: Model, frame: Frame) -> str:
    classes = ["frame"]
    if frame.milestone:
        classes.append("milestone")
    if not frame.ids:
        classes.append("unknown")
    if frame.diverged:
        classes.append("diverged")
    caption = [f"#{frame.seq}"]
    if frame.diverged:
        caption.insert(0, '<span class="badge div">divergence</span>')
    if frame.milestone:
        caption.append(f'<span class="badge">milestone</span>{_e(model.name(frame.milestone))}')
    elif frame.ids:
        caption.append(_e(" / ".join(model.name(s) for s in frame.ids[:2])))
    elif frame.negative:
        caption.append(f'<span class="badge neg">negative milestone</span>'
                       f"{_e(model.name(frame.negative))}")
    else:
        novel = f": never-seen words {', '.join(frame.novel[:5])}" if frame.novel else ""
        caption.append(f"matched no model state{_e(novel)}")
    caption.append(f'<br>via {_e(", ".join(frame.via))}')
    return (f'<figure class="{" ".join(classes)}">{_frame_body(frame)}'
            f'<figcaption>{" · ".join(caption[:-1])}{caption[-1]}</figcaption></figure>')


def _timeline(model: Model, view: RunView, found: Sequence[Phase]) -> str:
    groups: list[tuple[int, list[Frame]]] = []
    for frame in view.frames:
        if not groups or groups[-1][0] != frame.phase:
            groups.append((frame.phase, []))
        groups[-1][1].append(frame)
    parts = ['<div class="timeline">']
    for phase, frames in groups:
        name = f"phase {phase + 1}: {found[phase].name}" if phase < len(found) else "frames"
        parts.append(f'<div class="phase"><div class="phase-name">{_e(name)}</div>'
                     f'<div class="frames">{"".join(_frame_html(model, f) for f in frames)}'
                     "</div></div>")
    parts.append("</div>")
    return "".join(parts)


def _divergence_html(model: Model, view: RunView) -> str:
    if view.divergence is None:
        return ""
    frame = view.frames[view.divergence]
    shape = _shape(frame)
    parts = ['<h4>Divergence</h4><div class="compare">']
    if view.missing:
        parts.append(_state_figure(model, view.missing, shape,
                                   f"expected: '{_e(model.name(view.missing))}' "
                                   "(exemplar from successful runs)"))
    if frame.negative:
        parts.append(_state_figure(model, frame.negative, shape,
                                   f"negative milestone '{_e(model.name(frame.negative))}' "
                                   "(seen in failed runs)"))
    parts.append(f"<figure><figcaption>the run showed instead (#{frame.seq})</figcaption>"
                 f"{_frame_body(frame, 340)}</figure>")
    if view.missing and frame.step is not None:
        decision = judge(model, frame.step.fingerprint, view.missing)
        parts.append(f'<div><b>equivalence</b>: {_e(decision.verdict)} by tier '
                     f'<b>{_e(decision.tier)}</b><div class="evidence">{_evidence(decision)}'
                     "</div></div>")
    parts.append("</div>")
    return "".join(parts)


def _doubts_html(model: Model, view: RunView) -> str:
    if not view.doubts:
        return ""
    rows = ["<h4>Decisions to check</h4><table class=\"doubts\"><tr><th>frame</th>"
            "<th>model state</th><th>verdict</th><th>tier</th><th>evidence</th><th>why</th></tr>"]
    for frame, sid, decision, why in view.doubts:
        state = model.states[sid]
        image = exemplar_image(state, model.settings.thumbnail_size, (150, 94))
        exemplar = (f'<img alt="{_e(state.name)}" src="{data_uri(_png(image), "image/png")}">'
                    if image is not None else "")
        rows.append(f"<tr><td>#{frame.seq}{_frame_body(frame, 150)}</td>"
                    f"<td>{_e(state.name)}{exemplar}</td><td>{_e(decision.verdict)}</td>"
                    f"<td>{_e(decision.tier)}</td><td class=\"evidence\">{_evidence(decision)}"
                    f"</td><td>{_e(why)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _run_html(model: Model, view: RunView, found: Sequence[Phase]) -> str:
    status = view.status
    verdict = status.verdict or "fail"
    head = (f'<article class="run {verdict}" id="{_e(view.run.run_id)}"><h3>'
            f'<span class="verdict {verdict}">{verdict.upper()}</span> {_e(view.run.run_id)}'
            f'</h3><div class="muted">coverage {status.coverage:.0%} · '
            f'{len(view.frames)} frames</div>')
    lines = [f'<p class="reason">{_e(status.reason or "")}</p>']
    if verdict == "fail":
        lines.append(f'<p>cause: <span class="cause">{_e(status.cause or "unknown")}</span>'
                     + (f" · failed {_e(view.location)}" if view.location else "") + "</p>")
    for warning in status.warnings:
        lines.append(f'<p class="muted">warning: {_e(warning)}</p>')
    return (head + "".join(lines) + _timeline(model, view, found)
            + _divergence_html(model, view) + _doubts_html(model, view) + "</article>")


def _phases_table(model: Model, found: Sequence[Phase]) -> str:
    if not found:
        return ""
    rows = ["<table><tr><th>phase</th><th>ends at milestone</th><th>states</th></tr>"]
    for phase in found:
        end = model.name(phase.milestone) if phase.milestone else "—"
        rows.append(f"<tr><td>{phase.index + 1}. {_e(phase.name)}</td><td>{_e(end)}</td>"
                    f"<td>{_e(', '.join(model.name(s) for s in phase.states[:8]))}"
                    f"{' …' if len(phase.states) > 8 else ''}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def analyse_runs(model: Model, runs: Sequence[Run]) -> list[RunView]:
    """Each run judged (as ``validate`` does) and analysed for the report."""
    index = StateIndex(model)
    llm = LLMJudge(model.settings.llm) if model.settings.llm.enabled else None
    return [analyse_run(model, run, index, llm) for run in runs]


def render_report(model: Model, views: Sequence[RunView] = ()) -> str:
    """The whole report page for `model` and the runs analysed in `views`."""
    found = phases(model)
    failed = sum(1 for v in views if v.status.verdict != "pass")
    summary = ""
    if views:
        rows = "".join(
            f'<tr><td><a href="#{_e(v.run.run_id)}">{_e(v.run.run_id)}</a></td>'
            f'<td class="{"ok" if v.status.verdict == "pass" else "bad"}">'
            f'{_e(v.status.verdict or "fail")}</td><td>{v.status.coverage:.0%}</td>'
            f'<td>{_e(v.status.cause or "")}</td><td>{_e(v.status.reason or "")}</td></tr>'
            for v in views)
        summary = (f"<h2>Runs: {len(views) - failed} passed, {failed} failed</h2><table>"
                   "<tr><th>run</th><th>verdict</th><th>coverage</th><th>cause</th>"
                   f"<th>reason</th></tr>{rows}</table>")
    essential = " → ".join(_e(model.name(s)) + (" (may be skipped)" if s in model.soft else "")
                           for s in model.essential)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>trustlayer report: {_e(model.task)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>trustlayer report: {_e(model.task)}</h1>
<div class="muted">model version {model.version} · learned from {len(model.training_runs)}
successful runs · {len(model.states)} states, {len(model.essential)} essential,
{len(model.negative)} negative</div>
<div>milestones: {essential or "none"}</div></header>
<section id="model"><h2>Learned model</h2>
<div class="legend"><span class="l-essential">essential milestone</span>
<span class="l-soft">interruption (may be skipped)</span>
<span class="l-optional">optional state</span><span class="l-converge">convergence point</span>
<span class="l-negative">negative milestone (seen in failed runs)</span>
<span>bands: phases, milestone to milestone</span></div>
<div class="scroll">{graph_svg(model)}</div>
<h2>Phases</h2>{_phases_table(model, found)}
</section>
<section id="runs">{summary}
{"".join(_run_html(model, v, found) for v in views)}
</section>
</body></html>
"""


def write_report(model: Model, views: Sequence[RunView], path: str | Path) -> None:
    """Write the report page to `path` (its folder made if missing)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(render_report(model, views), encoding="utf-8")


def cmd_report(args: Any) -> int:
    """``trustlayer report MODEL.json [RUN...] -o report.html``."""
    import sys

    from trustlayer.cli import EXIT_OK, load_model, task_runs
    model = load_model(args.model)
    runs = task_runs(model, args.runs, args.quiet) if args.runs else []
    write_report(model, analyse_runs(model, runs), args.output)
    print(f"report of {len(runs)} runs -> {args.output}", file=sys.stderr)
    return EXIT_OK
