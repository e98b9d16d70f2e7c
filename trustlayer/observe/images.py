"""Screenshots of trace events: read (a ``data:`` URI or a file inside the trace's
directory, never outside it), checked (a real PNG, JPEG or WebP image within the pixel
limit, from its header only) and decoded only when a fingerprint needs their pixels; and
screenshots the runner fingerprinted itself (``screenshot_fingerprint``)."""
from __future__ import annotations

import binascii
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from trustlayer.errors import (
    BAD_IMAGE,
    IMAGE_NOT_FOUND,
    IMAGE_TOO_LARGE,
    PATH_OUTSIDE_DIR,
    TraceError,
    UnjudgeableEvent,
)
from trustlayer.observe.regular import NotReadable, read_regular
from trustlayer.settings import Settings
from trustlayer.strict_base64 import strict_b64decode

HEX64, HEX16 = re.compile(r"[0-9a-f]{64}"), re.compile(r"[0-9a-f]{16}")
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP")
#: Headers read, by the bytes' SHA-256: a fleet of agents shows the same screens, and the
#: header of bytes already seen needs no reading again (cleared when full, to stay small).
_HEADERS: dict[str, tuple[str | None, tuple[int, int]]] = {}
HEADERS_KEPT = 1 << 12


class ImageRef:
    """A screenshot held as its encoded bytes; pixels are decoded on first use."""

    __slots__ = ("_gray", "data", "failure", "origin", "sha256", "size")

    def __init__(self, data: bytes, origin: str, size: tuple[int, int] | None = None,
                 sha256: str | None = None):
        self.data, self.origin = data, origin
        #: the bytes' digest (given: already computed from `data` by the caller)
        self.sha256 = sha256 or hashlib.sha256(data).hexdigest()
        self._gray: Image.Image | None = None
        #: width and height, as the header says (None: not read yet)
        self.size = size
        #: why the pixels cannot be used (set when decoding failed or ran out of time)
        self.failure: str | None = None

    def gray(self, min_side: int = 0) -> Image.Image:
        """The decoded image in 8-bit grayscale (decoded once), first reduced by a whole
        factor that keeps its shorter side at least `min_side` (0: full size).

        Raises :class:`~trustlayer.errors.UnjudgeableEvent` when the pixels do not decode
        (a truncated file, corrupt compressed data, a palette image without its palette):
        the header, checked when the event was read, promised an image the data is not.
        """
        if self.failure is not None:
            raise UnjudgeableEvent(self.failure)
        if self._gray is not None and (min_side or self._gray.size == self.size):
            return self._gray
        try:
            pixels: Pixels | Exception = decode_gray(self.data, min_side)
        except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError,
            pixels = exc  # zlib.error... for bad data: each means the same here
        return self.adopt(pixels)

    def adopt(self, pixels: Pixels | Exception) -> Image.Image:
        """Keep what :func:`decode_gray` gave for these bytes (here or in another process);
        an exception it raised marks the screenshot failed, and is raised as
        :class:`~trustlayer.errors.UnjudgeableEvent`."""
        if isinstance(pixels, Exception):
            self.failure = (f"screenshot {self.origin} does not decode "
                            f"({type(pixels).__name__}: {pixels})")
            raise UnjudgeableEvent(self.failure) from pixels
        self._gray, self.size = pixels
        return self._gray


#: A screenshot's pixels as the equivalence tiers use them: in 8-bit grayscale, maybe
#: reduced, and the image's full size.
Pixels = tuple[Image.Image, tuple[int, int]]


def decode_gray(data: bytes, min_side: int) -> Pixels:
    """The image encoded in `data` in 8-bit grayscale, first reduced by a whole factor that
    keeps its shorter side at least `min_side` (0: full size), and its full size. Raises
    what Pillow raises for data that does not decode."""
    with Image.open(io.BytesIO(data)) as image:
        factor = max(1, min(image.size) // min_side) if min_side else 1
        image.load()
        plain: Image.Image = image
        if image.mode == "P":
            plain = _palette_to_gray(image)
        elif image.mode not in ("L", "LA", "RGB", "RGBA"):  # 16-bit etc.: no reduce
            plain = image.convert("L")
        return (plain.reduce(factor) if factor > 1 else plain).convert("L"), image.size


@dataclass(frozen=True)
class ScreenshotPrint:
    """A screenshot fingerprinted by the runner (the ``screenshot_fingerprint`` extension of
    the format, see docs/TRACE_FORMAT.md): what the equivalence tiers need, not the image."""

    sha256: str
    phash: int
    thumbnail: bytes


def parse_screenshot_print(obj: Any, settings: Settings, source: str,
                           line: int | None) -> ScreenshotPrint:
    """The runner's fingerprint of a screenshot, checked (hex digests, a thumbnail of the
    model's size)."""
    name = "observation.screenshot_fingerprint"
    if not isinstance(obj, dict):
        raise TraceError(f"{name} must be an object {{sha256, phash, thumbnail}}", source, line)
    sha, phash, thumbnail = obj.get("sha256"), obj.get("phash"), obj.get("thumbnail")
    if not isinstance(sha, str) or not HEX64.fullmatch(sha):
        raise TraceError(f"{name}.sha256 must be 64 lowercase hex digits", source, line)
    if not isinstance(phash, str) or not HEX16.fullmatch(phash):
        raise TraceError(f"{name}.phash must be 16 lowercase hex digits", source, line)
    try:
        pixels = strict_b64decode(thumbnail if isinstance(thumbnail, str) else b"?")
    except (binascii.Error, ValueError):
        raise TraceError(f"{name}.thumbnail must be base64", source, line) from None
    size = settings.thumbnail_size
    if len(pixels) != size * size:
        raise TraceError(f"{name}.thumbnail has {len(pixels)} bytes, not {size}x{size} gray "
                         "pixels (the model's thumbnail_size)", source, line)
    return ScreenshotPrint(sha, int(phash, 16), pixels)


def _palette_to_gray(image: Image.Image) -> Image.Image:
    """A palette image in grayscale, exactly as ``convert("L")`` gives it, in a fraction of
    the time: Pillow converts the 256 palette entries once, then the pixel indices go
    through that table."""
    if image.palette is None:
        raise ValueError("a palette image without its palette (no PLTE chunk)")
    ramp = Image.frombytes("P", (256, 1), bytes(range(256)))
    ramp.putpalette(image.palette.tobytes(), image.palette.mode)
    return image.point(list(ramp.convert("L").tobytes()), "L")


def load_image(ref: str, base_dir: Path | None, settings: Settings, source: str,
               line: int | None) -> ImageRef:
    """Read a screenshot given as a `data:` URI or a path relative to `base_dir`.

    Raises :class:`TraceError` for paths that leave `base_dir`, missing files, anything
    but a regular file, files that are not PNG/JPEG/WebP images, and images over
    ``settings.max_image_bytes`` (checked before reading) or ``settings.max_image_pixels``.
    """
    if ref.startswith("data:"):
        header, _, payload = ref.partition(",")
        if not header.startswith("data:image/") or not header.endswith(";base64"):
            raise TraceError("screenshot data URI must be 'data:image/...;base64,...'", source,
                             line, BAD_IMAGE)
        if len(payload) // 4 * 3 > settings.max_image_bytes:
            raise TraceError(f"screenshot data URI holds about {len(payload) // 4 * 3} bytes, "
                             f"over the limit of {settings.max_image_bytes} (setting "
                             "max_image_bytes)", source, line, IMAGE_TOO_LARGE)
        try:
            data = strict_b64decode(payload)
        except (binascii.Error, ValueError):
            raise TraceError("screenshot data URI is not valid base64", source, line,
                             BAD_IMAGE) from None
        origin = "data URI"
    else:
        if base_dir is None:
            raise TraceError(f"screenshot path '{ref}' given but no image directory is allowed "
                             "here; send a data: URI instead", source, line, PATH_OUTSIDE_DIR)
        data, origin = _read_image_file(ref, base_dir, settings.max_image_bytes, source, line)
    digest = hashlib.sha256(data).hexdigest()
    size = _check_image(data, digest, origin, settings, source, line)
    return ImageRef(data, origin, size, digest)


def _read_image_file(ref: str, base_dir: Path, limit: int, source: str,
                     line: int | None) -> tuple[bytes, str]:
    """The bytes of the screenshot file `ref` (relative to `base_dir`, never outside it; a
    regular file of at most `limit` bytes) and its full path."""
    shown = ref if len(ref) <= 200 else ref[:200] + "…"
    root = base_dir.resolve()
    try:
        path = (root / ref).resolve()
        inside = not Path(ref).is_absolute() and path.is_relative_to(root)
        data = read_regular(path, limit) if inside else None
    except (FileNotFoundError, IsADirectoryError):
        raise TraceError(f"screenshot file not found: {path}", source, line,
                         IMAGE_NOT_FOUND) from None
    except NotReadable as exc:
        raise TraceError(f"screenshot file {exc}", source, line,
                         IMAGE_TOO_LARGE if exc.too_large else BAD_IMAGE) from None
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, no permission
        raise TraceError(f"screenshot path '{shown}' cannot be read ({exc})", source,
                         line) from None
    if data is None:
        raise TraceError(f"screenshot path '{shown}' leaves the trace directory {root}",
                         source, line, PATH_OUTSIDE_DIR)
    return data, str(path)


def _check_image(data: bytes, sha256: str, origin: str, settings: Settings, source: str,
                 line: int | None) -> tuple[int, int]:
    """The image's size, read from its header only (format and size checked, no pixel
    decoding); `sha256` is the digest of `data`."""
    header = _HEADERS.get(sha256)
    if header is None:
        header = _read_header(data, origin, source, line)
        if len(_HEADERS) >= HEADERS_KEPT:
            _HEADERS.clear()
        _HEADERS[sha256] = header
    fmt, (width, height) = header
    if fmt not in IMAGE_FORMATS:
        raise TraceError(f"screenshot {origin} is {fmt}, not PNG, JPEG or WebP", source, line,
                         BAD_IMAGE)
    if width * height > settings.max_image_pixels:
        raise TraceError(f"screenshot {origin} has {width}x{height} pixels, over the limit of "
                         f"{settings.max_image_pixels} (setting max_image_pixels)", source, line,
                         IMAGE_TOO_LARGE)
    return width, height


def _read_header(data: bytes, origin: str, source: str,
                 line: int | None) -> tuple[str | None, tuple[int, int]]:
    """The format and size the header of `data` gives (Pillow's reading, no pixels);
    raises :class:`TraceError` for bytes that are not an image Pillow opens."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.format, image.size
    except Image.DecompressionBombError:
        raise TraceError(f"screenshot {origin} is a decompression bomb", source, line,
                         IMAGE_TOO_LARGE) from None
    except Exception:
        raise TraceError(f"screenshot {origin} is not a PNG, JPEG or WebP image", source,
                         line, BAD_IMAGE) from None
