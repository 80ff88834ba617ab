"""Write small text-only PDFs with pypdf alone, and regenerate the bundled sample handbook.

Run `python sample_docs/make_sample_docs.py` to rewrite `sample_docs/handbook.pdf`. The output is
byte-identical on every run for a given pypdf version: content streams are stored uncompressed (so zlib
versions do not matter), no dates are written, and an unencrypted writer emits no random /ID.

The module is also imported by tests (by file path; `sample_docs` is not a package) to build fixture PDFs,
including pages with no text at all ("scanned" pages) and password-protected files.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject

__all__ = ["HANDBOOK_PAGES", "HANDBOOK_TITLE", "write_encrypted_pdf", "write_handbook", "write_text_pdf"]

# A4 in PostScript points, rounded to whole points.
PAGE_WIDTH_PT = 595
PAGE_HEIGHT_PT = 842
_MARGIN_PT = 56
_FONT_SIZE_PT = 10
_LEADING_PT = 14
# Helvetica at 10 pt averages about 5 pt per character, so 90 characters fit in the 483 pt text width.
_WRAP_CHARS = 90
_MAX_LINES = (PAGE_HEIGHT_PT - 2 * _MARGIN_PT) // _LEADING_PT + 1
_FONT_KEY = "/F1"
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")

HANDBOOK_PATH = Path(__file__).resolve().with_name("handbook.pdf")


def write_text_pdf(path: str | Path, pages: Sequence[str], *, title: str | None = None) -> None:
    """Write a PDF in which page i shows the text `pages[i]` in Helvetica on A4.

    Paragraphs are separated by blank lines; inside a paragraph, line breaks are treated as spaces and the
    text is re-wrapped at about 90 characters. An empty (or whitespace-only) string gives a page with no
    content stream, like a scanned page without a text layer. Text must be encodable as Windows-1252 and
    fit on one page; otherwise ValueError is raised.
    """
    _build_writer(pages, title=title).write(Path(path))


def write_encrypted_pdf(
    path: str | Path, pages: Sequence[str], user_password: str, *, title: str | None = None
) -> None:
    """Write the same PDF as `write_text_pdf`, encrypted so that opening it needs `user_password`.

    RC4-128 is used because pypdf implements it in pure Python; AES would need the optional
    `cryptography` or `pycryptodome` package, which this project does not depend on. The file identifier
    is random, so encrypted output is not byte-reproducible.
    """
    writer = _build_writer(pages, title=title)
    writer.encrypt(user_password, algorithm="RC4-128")
    writer.write(Path(path))


def _build_writer(pages: Sequence[str], *, title: str | None) -> PdfWriter:
    if isinstance(pages, str):
        raise TypeError("pages must be a sequence of strings, one per page, not a single string")
    writer = PdfWriter()
    for number, text in enumerate(pages, start=1):
        lines = _layout(text)
        if len(lines) > _MAX_LINES:
            raise ValueError(f"page {number} needs {len(lines)} lines but only {_MAX_LINES} fit; split it")
        page = writer.add_blank_page(width=PAGE_WIDTH_PT, height=PAGE_HEIGHT_PT)
        if lines:
            page[NameObject("/Resources")] = _font_resources()
            content = DecodedStreamObject()
            content.set_data(_content_stream(lines))
            page.replace_contents(content)
    if title is not None:
        writer.add_metadata({"/Title": title})
    return writer


def _layout(text: str) -> list[str]:
    """Wrap each paragraph and put one empty line between paragraphs."""
    lines: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text.strip()):
        if lines:
            lines.append("")
        # No breaks at hyphens: "home-\noffice" would be rejoined to "homeoffice" by text normalisers.
        lines.extend(
            textwrap.wrap(paragraph, width=_WRAP_CHARS, break_on_hyphens=False, break_long_words=False)
        )
    return lines


def _font_resources() -> DictionaryObject:
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
        NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    })
    return DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject(_FONT_KEY): font}),
        NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/Text")]),
    })


def _content_stream(lines: list[str]) -> bytes:
    top_pt = PAGE_HEIGHT_PT - _MARGIN_PT - _FONT_SIZE_PT
    ops = [b"BT", b"%s %d Tf" % (_FONT_KEY.encode(), _FONT_SIZE_PT), b"%d %d Td" % (_MARGIN_PT, top_pt)]
    step = 0
    for line in lines:
        if line:
            if step:
                ops.append(b"0 %d Td" % (-step * _LEADING_PT))
            ops.append(b"(" + _pdf_string(line) + b") Tj")
            step = 0
        step += 1
    ops.append(b"ET")
    return b"\n".join(ops) + b"\n"


def _pdf_string(text: str) -> bytes:
    """Encode `text` as the body of a PDF literal string in WinAnsiEncoding, escaping what must be."""
    try:
        raw = text.encode("cp1252")
    except UnicodeEncodeError as error:
        bad = text[error.start]
        raise ValueError(f"character {bad!r} cannot be shown with WinAnsiEncoding") from None
    out = bytearray()
    for byte in raw:
        if byte in b"\\()":
            out += b"\\" + bytes([byte])
        elif 32 <= byte < 127:
            out.append(byte)
        else:
            # Octal escapes keep the content stream plain ASCII.
            out += b"\\%03o" % byte
    return bytes(out)


HANDBOOK_TITLE = "Northwind Analytics Employee Handbook (fictional sample)"

HANDBOOK_PAGES = [
    """\
Northwind Analytics - Employee Handbook, version 2.3

This handbook describes a fictional company. It was written as sample material for testing \
question-answering systems; any resemblance to a real organisation is coincidental.

Section 1: Annual Leave and Time Off

Full-time employees are entitled to 25 days of annual leave per calendar year. Part-time employees \
receive a pro-rata share of this entitlement, calculated from their contracted working days per week. \
In the first year of employment, the entitlement is reduced in proportion to the months worked.

Unused leave may be carried over into the next calendar year, up to a maximum of 5 days. Carried-over \
days must be taken by 31 March; any days still remaining after that date are forfeited unless your \
manager has approved an exception in writing.

Leave must be requested at least 2 weeks in advance through the HR portal. Requests for more than 10 \
consecutive working days should be discussed with your manager before they are submitted. Managers aim \
to approve or decline every request within 5 working days.

Public holidays are not deducted from your annual leave. Each office observes the public holidays of the \
region in which it is located, and the list for the coming year is published in the HR portal every \
December.

Sick leave is separate from annual leave. If you are ill, inform your manager before 10:00 on the first \
day of absence. A medical certificate is required if you are ill for more than 3 days, that is, from the \
fourth day of absence. Days of illness during approved annual leave are credited back to you when you \
provide a certificate.

Special leave is granted for certain personal events: 1 day for moving house and 2 days for your own \
wedding.
""",
    """\
Section 2: Business Travel and Expenses

All business trips must be approved in advance by your manager and booked through the company travel \
portal. Keep all original receipts; expense claims must be submitted within 30 days after the end of \
the trip.

Accommodation. Hotel costs are reimbursed up to EUR 160 per night, including breakfast. In London and \
Paris the hotel limit is EUR 210 per night, because average room rates in those cities are considerably \
higher. If no room is available within the limit, book the cheapest suitable option and attach a short \
justification to your claim. Minibar, pay-TV and laundry costs are not reimbursed.

Meals. A meal allowance of EUR 45 per day is paid for each full day of travel, and EUR 22 for the days \
of departure and return. If a meal is provided by a customer or included in a conference fee, the \
allowance is reduced accordingly. Alcoholic drinks are never reimbursed.

Transport. Flights under 6 hours are booked in economy class; for longer flights, premium economy may be \
booked. Second-class rail travel is preferred for journeys of less than 4 hours. If you use your private \
car for a business trip, mileage is reimbursed at EUR 0.30 per km. Taxi costs are reimbursed only when \
public transport is not a reasonable option, for example late at night or with heavy equipment.

Payment. Corporate credit cards are issued to employees who travel more than six times a year. Cash \
advances of up to EUR 300 can be requested from the Finance team at least five working days before \
departure. Unused cash must be returned together with the expense claim.
""",
    """\
Section 3: Equipment and Home Office

Every employee receives a laptop on their first working day. Laptops are refreshed every 3 years; the IT \
team contacts you when your device is due for replacement, and the old device must be returned within \
two weeks of receiving the new one. Developers and data scientists may request a model with more memory.

Office desks are equipped with one external monitor, a docking station, a keyboard, a mouse and a \
headset. A second monitor can be requested if your manager confirms a business need.

Home office. Every employee is entitled to a one-off home-office equipment allowance of EUR 600. It may \
be spent on a desk, an office chair, a monitor, a headset or lighting. Submit your receipts in the HR \
portal within 6 months of your start date. Items bought with the allowance become your property after \
24 months; if you leave the company earlier, a pro-rata share must be repaid.

Mobile phones. Employees in customer-facing roles receive a company phone. Other employees may claim EUR \
20 per month towards their private phone contract if they are part of the on-call rotation.

Accessories and repairs. Replacement chargers, cables and headsets costing up to EUR 80 can be ordered \
in the IT shop without manager approval. Damage to company equipment must be reported to the IT service \
desk; repairs are arranged by the IT team and must not be carried out by third parties.
""",
    """\
Section 4: IT Security

Passwords must be at least 14 characters long and are changed every 180 days. Multi-factor \
authentication is mandatory for email, the HR portal and all customer systems. Never share your \
password, not even with colleagues from the IT team.

Lost or stolen devices. A lost or stolen laptop must be reported to the IT service desk within one hour \
of noticing the loss. The service desk can then lock and wipe the device remotely, which protects \
customer data. A lost company phone must be reported by the end of the same working day. If a device \
was stolen, also report the theft to the police and send the police reference number to the service desk.

Phishing. Report suspicious emails with the Report Phishing button in your mail client, or forward them \
to security@northwind-analytics.example within 24 hours. Do not click links or open attachments in a \
message you do not trust.

Incidents. Malware infections and accidental disclosure of personal data must be reported to the IT \
service desk immediately. Where the law requires it, the data protection officer notifies the \
supervisory authority within 72 hours.

Software and screens. Install software only from the company software centre. USB storage devices are \
blocked on all company laptops. Lock your screen whenever you leave your desk.

The IT service desk is available on weekdays from 08:00 to 18:00 at extension 4357. Outside these hours, \
call the on-call number printed on the back of your badge.
""",
]


def write_handbook(path: str | Path = HANDBOOK_PATH) -> Path:
    """Write the four-page sample handbook to `path` and return the path."""
    write_text_pdf(path, HANDBOOK_PAGES, title=HANDBOOK_TITLE)
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) > 1:
        print("usage: python sample_docs/make_sample_docs.py [OUTPUT.pdf]", file=sys.stderr)
        return 2
    written = write_handbook(args[0] if args else HANDBOOK_PATH)
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
