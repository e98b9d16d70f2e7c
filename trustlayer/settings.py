"""All tunable settings of trustlayer in one object, saved inside every model.

Like a scikit-learn estimator's constructor arguments: settings live here, learned
state lives in the model. Nothing here is specific to one task or application.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class LLMSettings:
    """The optional multimodal LLM tier (any OpenAI-compatible chat-completions API)."""

    enabled: bool = False
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key: str = "not-needed"
    timeout_s: float = 20.0
    max_calls_per_run: int = 8


@dataclass
class Settings:
    """Thresholds and limits used by learning and matching.

    Parameters
    ----------
    max_image_pixels:
        Screenshots with more pixels are refused (decompression bombs).
    max_image_bytes:
        Screenshot files (or data URIs) larger than this are refused before they are read.
    phash_same / phash_different:
        Perceptual-hash Hamming distances (64-bit hash) at or below which two screens
        look the same, and at or above which they look different.
    ssim_same / ssim_different:
        Masked SSIM on grayscale thumbnails: at or above ``ssim_same`` the screens
        look the same, at or below ``ssim_different`` different.
    thumbnail_size:
        Side of the square grayscale thumbnail used for SSIM and exemplars.
    unexplained_line_tolerance:
        Fraction of a state's text lines that may be unexplained by a model state's
        learned templates while still matching it (0 = every line must be explained).
    known_line_tolerance:
        Fraction of a state's lines that may be unexplained when they hold only words
        successful runs showed and change no learned value (a second search result, a
        side panel), unless the state learned a larger tolerance from its members.
    deadline_factor:
        A milestone is overdue when it took longer than this factor times the slowest
        successful run (used by the stream's deadlines).
    deadline_floor:
        No deadline, and no end-of-run silence, is shorter than this many seconds, however
        quick the successful runs were.
    drop_after_bypasses:
        Online refinement drops a milestone only after this many successful runs
        bypassed it.
    """

    max_image_pixels: int = 40_000_000
    max_image_bytes: int = 20 * 1024 * 1024
    phash_same: int = 4
    phash_different: int = 12
    ssim_same: float = 0.97
    ssim_different: float = 0.80
    thumbnail_size: int = 64
    unexplained_line_tolerance: float = 0.02
    known_line_tolerance: float = 0.1
    deadline_factor: float = 3.0
    deadline_floor: float = 30.0
    drop_after_bypasses: int = 2
    llm: LLMSettings = field(default_factory=LLMSettings)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form, stored in the model file."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Settings:
        """Inverse of :meth:`to_json`; unknown keys are ignored, missing ones default."""
        data = dict(data or {})
        llm = LLMSettings(**{f.name: data["llm"][f.name] for f in fields(LLMSettings)
                             if f.name in data.get("llm", {})})
        known = {f.name for f in fields(cls)} - {"llm"}
        return cls(llm=llm, **{k: v for k, v in data.items() if k in known})
