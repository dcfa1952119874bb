"""`manage.py audit HOST --pdf FILE` against the TLS lab: the one-off audit as a PDF report,
with no database, no broker and no worker (the audit CLI's sandbox checks that nothing was written)."""

from tests.support.pdf import ink_of_first_page, pdf_text
from tests.test_audit_cli import audit_cli, lab_target  # noqa: F401  (the sandboxed CLI fixture)


def test_it_writes_the_one_off_audit_as_a_pdf(audit_cli, tls_lab, tmp_path, no_chromium_left):  # noqa: F811
    target = tmp_path / "out" / "report.pdf"
    target.parent.mkdir()
    run = audit_cli(*lab_target(tls_lab, "b_tls10_enabled"), "--pdf", str(target))
    assert run.returncode == 0, run.stderr
    pdf = target.read_bytes()
    assert 10_000 < len(pdf) < 5_000_000
    text = " ".join(pdf_text(pdf).split())
    assert f"localhost:{tls_lab.port('b_tls10_enabled')}" in text
    assert f"Grade {tls_lab.spec('b_tls10_enabled').grade}" in text
    assert "Disable TLS 1.0" in text and "Recommendations" in text
    non_white, coloured = ink_of_first_page(pdf, tmp_path)
    assert non_white > 2000 and coloured > 200


def test_an_unwritable_pdf_path_fails_with_exit_2(audit_cli, tls_lab, tmp_path):  # noqa: F811
    run = audit_cli(*lab_target(tls_lab, "a_plus_rsa_hsts"), "--pdf", str(tmp_path / "missing-dir" / "r.pdf"))
    assert run.returncode == 2 and "the PDF could not be written" in run.stderr
