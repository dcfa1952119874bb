"""Writes requirements-prod.txt: what requirements-prod.in needs, at requirements.txt's versions.

pip resolves requirements-prod.in constrained by requirements.txt without installing anything
(`--dry-run --report`), so the production image gets exactly the versions the tests ran with and
none of the test tools. `make lock` runs this after pinning requirements.txt.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = "# Pinned by `make lock` from requirements-prod.in at requirements.txt's versions (deploy/lock_prod.py).\n"


def resolve() -> list[tuple[str, str]]:
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
             "--report", report.name, "-r", str(ROOT / "requirements-prod.in"), "-c", str(ROOT / "requirements.txt")],
            check=True)
        installs = json.loads(Path(report.name).read_text())["install"]
    return sorted(((i["metadata"]["name"], i["metadata"]["version"]) for i in installs), key=lambda p: p[0].lower())


def main() -> None:
    lines = [f"{name}=={version}\n" for name, version in resolve()]
    (ROOT / "requirements-prod.txt").write_text(HEADER + "".join(lines))


if __name__ == "__main__":
    main()
