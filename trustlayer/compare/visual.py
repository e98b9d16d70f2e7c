"""Visual comparison of screenshots: perceptual-hash distance and masked SSIM on thumbnails.

SSIM runs on small grayscale thumbnails, never on full frames. The mask holds the
thumbnail pixels that differ between members of one model state (a clock, a cursor,
a spinner): it is learned from the training runs, and those pixels are ignored.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from skimage.metrics import structural_similarity

VOLATILE_PIXEL_DELTA = 0.12


def hamming(left: int, right: int) -> int:
    """Number of differing bits of two 64-bit perceptual hashes."""
    return (left ^ right).bit_count()


def learn_volatile_mask(thumbnails: Sequence[np.ndarray]) -> np.ndarray | None:
    """Boolean mask of thumbnail pixels that vary between frames judged the same."""
    if len(thumbnails) < 2:
        return None
    stack = np.stack(thumbnails)
    varying = (stack.max(axis=0) - stack.min(axis=0)) > VOLATILE_PIXEL_DELTA
    return varying if varying.any() else None


def masked_ssim(left: np.ndarray, right: np.ndarray, volatile: np.ndarray | None) -> float:
    """SSIM of two thumbnails, averaged over the pixels that are not volatile."""
    _, ssim_map = structural_similarity(left, right, data_range=1.0, full=True)
    if volatile is None:
        return float(ssim_map.mean())
    keep = ~volatile
    return float(ssim_map[keep].mean()) if keep.any() else 1.0
