"""An uploaded image's pixel size read from its header, without decoding it: a logo's bytes say little
about its cost (a 48 KB 1-bit PNG of 20,000 x 20,000 pixels took Chromium 5 GB to print)."""

from __future__ import annotations

import struct

MAX_PIXELS = 4_000_000   # 2000 x 2000: far more than a logo printed at 60 px needs
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (baseline, progressive, lossless, ...): not DHT (C4), JPG (C8), DAC (CC).
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def pixel_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG or JPEG, or None when the header cannot be read."""
    if data.startswith(PNG_MAGIC):
        return _png_size(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def too_large(data: bytes) -> str | None:
    """Why the image is refused, in words, or None."""
    size = pixel_size(data)
    if size is None:
        return "Its size cannot be read: save it again as a plain PNG or JPEG."
    width, height = size
    if width * height > MAX_PIXELS or width == 0 or height == 0:
        return (f"The logo is {width:,} x {height:,} pixels: at most {MAX_PIXELS // 1_000_000} megapixels "
                "(2000 x 2000). Scale it down; it is printed about 60 px high.")
    return None


def _png_size(data: bytes) -> tuple[int, int] | None:
    # The first chunk must be IHDR: length (4), type (4), width (4), height (4).
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:          # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:   # no length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2:at + 4])
        if marker in _SOF:
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None
