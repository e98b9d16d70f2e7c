"""What the HTML report and the PNG picture draw alike: state names wrapped to a box,
a state's kind, the convergence points, exemplar thumbnails and canonical lines as a
person reads them."""
from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from trustlayer.model import Model, ModelState

SNIPPET_LINES = 7
LINE_PREFERENCE = {"X": 0, "F": 1, "A": 2, "T": 3, "U": 4}


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
    ...                 "F|exists a.py", "F|changed b.py"])
    ['hello world', 'changed b.py', '- button "Save"']
    """
    kept = [line for line in lines
            if not line.startswith(("F|content ", "F|exists ", "F|unchanged "))]
    kept.sort(key=lambda line: (LINE_PREFERENCE.get(line[:1], 5), line))
    return [line.partition("|")[2] for line in kept[:limit]]


def wrap(name: str, width: int = 21, lines: int = 2) -> list[str]:
    """`name` in at most `lines` lines of `width` characters (cut with an ellipsis)."""
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
    """``negative``, ``soft``, ``essential`` or ``optional``: how a state is drawn."""
    if state_id in model.negative:
        return "negative"
    if state_id in model.soft:
        return "soft"
    if state_id in model.essential:
        return "essential"
    return "optional"
