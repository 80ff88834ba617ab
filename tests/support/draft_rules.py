"""Scripted chat replies for the drafting tests: a rule for tests/fake_ollama.py, not a model.

The rule reads the last user message. A drafting prompt holds the page between `[page start]` and `[page end]`;
the rule returns `{"drafts": SCRIPT[title]}` (cut to the schema's maxItems) for the scripted page whose section
title the page text contains. A
parametric prompt (it says "No documents are available") gets `{"answer": PARAMETRIC.get(question, "I do not
know.")}`. An unanswerable prompt (it says "does not mention") gets `UNANSWERABLE[title]`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

GOOD_LEAVE = {"question": "How many days of annual leave does a full-time employee get each year?",
              "quote": "Full-time employees are entitled to 25 days of annual leave per calendar year.",
              "facts": ["25"], "type": "number"}
GOOD_CARRY = {"question": "By what date must days brought forward from last year be used up?",
              "quote": "Carried-over days must be taken by 31 March", "facts": ["31 March"], "type": "date"}
DEICTIC = {"question": "According to the text, how far ahead must holidays be requested?",
           "quote": "Leave must be requested at least 2 weeks in advance through the HR portal.",
           "facts": ["2 weeks"], "type": "rule"}
GOOD_HOTEL = {"question": "What is the nightly cap for accommodation in most cities?",
              "quote": "Hotel costs are reimbursed up to EUR 160 per night, including breakfast.",
              "facts": ["EUR 160"], "type": "number"}
INVENTED = {"question": "How much may a taxi cost per day?", "quote": "Taxi costs are reimbursed up to EUR 50 per day.",
            "facts": ["EUR 50"], "type": "number"}
COPY = {"question": "In London and Paris the hotel limit is how much per night?",
        "quote": "In London and Paris the hotel limit is EUR 210 per night", "facts": ["EUR 210"], "type": "number"}
WRONG_PAGE = {"question": "How quickly must a missing notebook computer be reported?",
              "quote": "A lost or stolen laptop must be reported to the IT service desk within one hour",
              "facts": ["one hour"], "type": "rule"}
FACT_MISSING = {"question": "How much money can I spend on furniture for working from home?",
                "quote": "Every employee is entitled to a one-off home-office equipment allowance of EUR 600.",
                "facts": ["EUR 800"], "type": "number"}
GOOD_LAPTOP = {"question": "How often do staff get a new computer?", "quote": "Laptops are refreshed every 3 years",
               "facts": ["3 years"], "type": "rule"}
GOOD_PASSWORD = {"question": "What is the minimum password length?",
                 "quote": "Passwords must be at least 14 characters long", "facts": ["14 characters"], "type": "rule"}
NEAR_DUPLICATE = {"question": "What is the password minimum length?",
                  "quote": "Passwords must be at least 14 characters long and are changed every 180 days.",
                  "facts": ["14 characters"], "type": "rule"}
SAME_QUESTION = {"question": "What is the minimum password length?",
                 "quote": "Multi-factor authentication is mandatory for email, the HR portal and all customer systems.",
                 "facts": ["email"], "type": "rule"}

SCRIPT = {
    "Section 1: Annual Leave": [GOOD_LEAVE, GOOD_CARRY, DEICTIC],
    "Section 2: Business Travel": [GOOD_HOTEL, INVENTED, COPY],
    "Section 3: Equipment": [WRONG_PAGE, FACT_MISSING, GOOD_LAPTOP],
    "Section 4: IT Security": [GOOD_PASSWORD, NEAR_DUPLICATE, SAME_QUESTION],
}
PARAMETRIC = {GOOD_LEAVE["question"]: "Most full-time employees get 25 days."}
UNANSWERABLE = {
    "Section 1: Annual Leave": {"question": "Is there a sabbatical programme for staff in Singapore?",
                                "original": "HR portal", "changed": "sabbatical programme Singapore"},
    "Section 2: Business Travel": {"question": "What is the hotel limit per night in Tokyo?",
                                   "original": "London", "changed": "Tokyo"},
    "Section 3: Equipment": {"question": "Which tablet do designers receive?", "original": "laptop",
                             "changed": "tablet designers"},
    "Section 4: IT Security": {"question": "Who audits the firewall of the Lisbon office?",
                               "original": "software centre", "changed": "firewall Lisbon"},
}
_PAGE = re.compile(r"\[page start\]\n(.*?)\n\[page end\]", re.DOTALL)


def _title(content: str) -> str:
    page = _PAGE.search(content)
    text = page.group(1) if page else ""
    return next((title for title in SCRIPT if title in text), "")


def draft_rule(body: dict) -> dict:
    """The rule described in the module docstring."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if "No documents are available" in content:
        question = content.rsplit("Question: ", 1)[-1].strip()
        return {"answer": PARAMETRIC.get(question, "I do not know.")}
    if "does\nnot mention" in content or "does not mention" in content:
        return UNANSWERABLE[_title(content)]
    # as a schema-constrained model would; a request without the drafts schema (a warm-up) gets none
    limit = ((body.get("format") or {}).get("properties") or {}).get("drafts", {}).get("maxItems", 0)
    return {"drafts": SCRIPT.get(_title(content), [])[:limit]}


# -- reading and writing the drafts CSV in tests ----------------------------------------------------------------
def csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def write_csv(path: Path, rows: list[dict]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def find_row(rows: list[dict], scripted: dict) -> dict:
    """The CSV line of one scripted draft (matched by question and quote)."""
    return next(r for r in rows if r["question"] == scripted["question"] and r["quote"] == scripted["quote"])
