"""Issue 11, inputs: AES-encrypted PDFs (15), every bad file in one pass (19), dangling links and duplicates (22)."""

import os
import shutil
import subprocess
import sys

import pytest
from pypdf import PdfWriter

from chatbot.cli import main as rag_chat
from pdfrag.errors import PdfError
from pdfrag.pdfs import duplicate_warnings, read_documents, read_folder, read_pdf
from tests.conftest import REPO


def write_aes_pdf(path, text: str, password: str) -> None:
    """A one-page PDF with `text`, AES-256 encrypted (pypdf needs `cryptography` for this)."""
    from tests.conftest import pdfgen
    pdfgen.write_text_pdf(path, [text])
    writer = PdfWriter(clone_from=str(path))
    writer.encrypt(password, algorithm="AES-256")
    writer.write(path)


def test_aes_encrypted_pdf_with_empty_password_is_read(tmp_path):
    path = tmp_path / "aes.pdf"
    write_aes_pdf(path, "Travel costs need a receipt within thirty days.", "")
    assert "receipt within thirty days" in read_pdf(path).pages[0].text


def test_aes_encrypted_pdf_with_a_password_is_refused_by_name(tmp_path):
    path = tmp_path / "locked.pdf"
    write_aes_pdf(path, "Secret.", "s3cret")
    with pytest.raises(PdfError, match="encrypted with a password") as err:
        read_pdf(path)
    assert str(path) in str(err.value)


def test_missing_crypto_package_is_a_clear_error_naming_the_file(tmp_path):
    """A real process in which `cryptography` cannot be imported, as on an install without it."""
    path = tmp_path / "aes.pdf"
    write_aes_pdf(path, "Readable behind an empty password.", "")
    code = ("import sys; sys.modules['cryptography'] = None\n"
            "from chatbot.cli import main\n"
            f"sys.exit(main(['pages', {str(path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "cryptography" in done.stderr and "Traceback" not in done.stderr


def test_every_bad_file_in_a_folder_is_reported_in_one_pass(make_pdf, tmp_path):
    make_pdf("good.pdf", ["A good page about hotels."])
    make_pdf("sub/also-good.pdf", ["Another good page."])
    docs = tmp_path / "docs"
    (docs / "empty.pdf").write_bytes(b"")
    (docs / "text.pdf").write_text("just text, not a PDF")
    (docs / "cut.pdf").write_bytes((docs / "good.pdf").read_bytes()[:40])
    with pytest.raises(PdfError) as err:
        read_documents(docs)
    message = str(err.value)
    assert message.startswith(f"3 of 5 PDF files under {docs} cannot be read")
    assert [os.path.basename(p) for p, _ in err.value.problems] == ["cut.pdf", "empty.pdf", "text.pdf"]
    assert "empty (0 bytes)" in message and "does not start with %PDF-" in message and "corrupt" in message


def test_rag_chat_pages_lists_the_good_files_and_reports_the_bad(make_pdf, tmp_path, capsys):
    make_pdf("good.pdf", ["A good page about hotels and their nightly limit."])
    (tmp_path / "docs" / "empty.pdf").write_bytes(b"")
    assert rag_chat(["pages", str(tmp_path / "docs")]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("good.pdf#p1\tA good page about hotels")
    assert "1 of 2 PDF files" in err and "empty.pdf: the file is empty" in err


def test_dangling_symlink_is_reported_not_skipped(make_pdf, tmp_path):
    make_pdf("good.pdf", ["A good page."])
    link = tmp_path / "docs" / "moved.pdf"
    link.symlink_to(tmp_path / "nowhere" / "moved.pdf")
    folder = read_folder(tmp_path / "docs")
    assert [d.doc_id for d in folder.documents] == ["good.pdf"]
    [(path, problem)] = folder.problems
    assert path == str(link) and "symbolic link to a missing file" in problem and "nowhere" in problem
    with pytest.raises(PdfError, match="moved.pdf: a symbolic link"):
        read_documents(tmp_path / "docs")


def test_two_files_with_the_same_content_get_a_warning(make_pdf, tmp_path, capsys):
    first = make_pdf("policy.pdf", ["The hotel limit is EUR 160 per night."])
    make_pdf("other.pdf", ["Something else entirely."])
    shutil.copy(first, tmp_path / "docs" / "policy-copy.pdf")
    documents = read_documents(tmp_path / "docs")
    [warning] = duplicate_warnings(documents)
    assert "policy-copy.pdf, policy.pdf have the same content" in warning
    assert duplicate_warnings([d for d in documents if d.doc_id != "policy-copy.pdf"]) == ()
    assert rag_chat(["pages", str(tmp_path / "docs")]) == 0
    assert "warning: policy-copy.pdf, policy.pdf have the same content" in capsys.readouterr().err
