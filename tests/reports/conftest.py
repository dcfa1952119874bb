"""Helpers for the PDF report tests: read a PDF as text (pypdf), as pixels (poppler's pdftoppm),
and count the Chromium processes this test process started."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from tests.domain.factories import make_facts
from tlsaudit.audits import services as audit_services
from tlsaudit.audits.models import Audit


def done_audit(site, **facts_kwargs) -> Audit:
    """A finished audit of `site` from factory facts (no network), the site's summary updated."""
    audit = Audit.objects.create(site=site, organization=site.organization, status="running")
    audit.facts = make_facts(**facts_kwargs).to_dict()
    audit.status = "done"
    audit_services.apply_report(audit, save_fields=["facts", "status"])
    audit_services.update_site_summary(audit)
    return audit


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


def chromium_descendants() -> list[int]:
    """Chromium processes below this test process (other engineers' browsers are not ours to count)."""
    parents = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    ours, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - ours
        ours |= frontier
    found = []
    for pid in ours:
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if "chrom" in exe and state != "Z":
            found.append(pid)
    return found


@pytest.fixture
def no_chromium_left():
    """Fails the test if it leaves a Chromium process behind."""
    before = set(chromium_descendants())
    yield
    left = set(chromium_descendants()) - before
    assert not left, f"Chromium processes left running: {sorted(left)}"
