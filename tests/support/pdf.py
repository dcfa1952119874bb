"""Reading a PDF in tests: as text (pypdf) and as pixels (poppler's pdftoppm)."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path


def pdf_text(pdf: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)


def pdf_pages(pdf: bytes) -> int:
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(pdf)).pages)


def ink_of_first_page(pdf: bytes, tmp_path: Path) -> tuple[int, int]:
    """(non-white pixels, coloured pixels) of page 1 rendered at 50 dpi by pdftoppm (PPM: no PIL needed)."""
    source = tmp_path / "report.pdf"
    source.write_bytes(pdf)
    subprocess.run(["pdftoppm", "-r", "50", "-f", "1", "-l", "1", str(source), str(tmp_path / "page")], check=True,
                   timeout=60)
    ppm = next(tmp_path.glob("page*.ppm")).read_bytes()
    pixels = read_ppm(ppm)
    non_white = sum(1 for r, g, b in pixels if min(r, g, b) < 240)
    coloured = sum(1 for r, g, b in pixels if max(r, g, b) - min(r, g, b) > 60)
    return non_white, coloured


def read_ppm(data: bytes) -> list[tuple[int, int, int]]:
    fields, index = [], 0
    while len(fields) < 4:  # magic, width, height, maxval
        while data[index:index + 1].isspace():
            index += 1
        end = index
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[index:end])
        index = end
    assert fields[0] == b"P6"
    body = data[index + 1:]
    return [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
