import pytest

from pdfrag.errors import PdfError
from pdfrag.pdfs import read_documents, read_pdf
from tests.conftest import pdfgen


def test_folder_is_read_recursively_sorted_with_posix_ids(make_pdf, tmp_path):
    make_pdf("b.pdf", ["Bravo page one."])
    make_pdf("sub/a.pdf", ["Alpha page one.", "Alpha page two."])
    (tmp_path / "docs" / "notes.txt").write_text("not a pdf, ignored because of its suffix")
    docs = read_documents(tmp_path / "docs")
    assert [d.doc_id for d in docs] == ["b.pdf", "sub/a.pdf"]
    assert [p.source_id for p in docs[1].pages] == ["sub/a.pdf#p1", "sub/a.pdf#p2"]
    assert "Alpha page two." in docs[1].pages[1].text
    assert len(docs[0].sha256) == 64 and docs[0].sha256 != docs[1].sha256


def test_single_file_gets_its_name_as_id(make_pdf):
    path = make_pdf("one.pdf", ["Only page."])
    assert [d.doc_id for d in read_documents(path)] == ["one.pdf"]


def test_page_without_text_is_reported_not_dropped(make_pdf):
    doc = read_pdf(make_pdf("scan.pdf", ["Text page.", "", "Another text page."]))
    assert [p.page for p in doc.pages] == [1, 2, 3]
    assert doc.empty_pages == (2,)


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"hello, I am a text file", "not a PDF"),
    (b"%PDF-1.7\n1 0 obj <</Type /Catalog>> garbage without xref or trailer", "corrupt"),
])
def test_bad_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "bad.pdf"
    path.write_bytes(content)
    with pytest.raises(PdfError) as err:
        read_pdf(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_truncated_pdf_is_corrupt(make_pdf, tmp_path):
    good = make_pdf("good.pdf", ["Some text that will be cut."]).read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(good[: len(good) // 3])
    with pytest.raises(PdfError, match="corrupt"):
        read_pdf(path)


def test_encrypted_with_password_is_refused(tmp_path):
    path = tmp_path / "locked.pdf"
    pdfgen.write_encrypted_pdf(path, ["Secret text."], "s3cret")
    with pytest.raises(PdfError, match="encrypted with a password") as err:
        read_pdf(path)
    assert "locked.pdf" in str(err.value)


def test_encrypted_with_empty_password_is_read(tmp_path):
    path = tmp_path / "owner-only.pdf"
    pdfgen.write_encrypted_pdf(path, ["Readable text behind an empty password."], "")
    assert "Readable text" in read_pdf(path).pages[0].text


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(PdfError, match="no such file"):
        read_documents(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PdfError, match="no .pdf files"):
        read_documents(tmp_path / "empty")
