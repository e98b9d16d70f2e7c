"""A screenshot's pHash and thumbnail are computed when first read, exactly as eagerly;
judging screens whose text decides them decodes none of those screens."""
import io

from devsets import EXAMPLES
from PIL import Image

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.fingerprints import fingerprint, image_signature
from trustlayer.observe.images import ImageRef
from trustlayer.observe.trace_events import Observation
from trustlayer.observe.traces import read_runs

JUPYTER = EXAMPLES / "jupyter"


def png() -> bytes:
    pixels = bytes((x * 7 + y * 3) % 256 for y in range(150) for x in range(200))
    out = io.BytesIO()
    Image.frombytes("L", (200, 150), pixels).quantize(16).save(out, format="PNG")
    return out.getvalue()


def test_the_signature_is_computed_on_first_read_and_equals_the_eager_one():
    shot = ImageRef(png(), "a.png")
    fp = fingerprint(Observation(screenshot=shot, text="saved"), 64)
    assert shot._gray is None and fp.image_sha == shot.sha256
    assert (fp.phash, fp.thumbnail) == image_signature(ImageRef(png(), "b.png"), 64)
    assert shot._gray is not None


def test_judging_screens_with_text_leaves_most_screenshots_undecoded():
    model = learn(read_runs([JUPYTER / "train"]))
    runs = read_runs([JUPYTER / "test"])
    for run in runs:
        judge_run(model, run)
    shots = [e.observation.screenshot for r in runs for e in r.states
             if e.observation.screenshot is not None]
    decoded = sum(shot._gray is not None for shot in shots)
    assert shots and decoded < len(shots) / 2, (decoded, len(shots))
