"""Write the fictional Northwind Analytics document collection (sample_docs/collection/*.pdf).

Run `python sample_docs/make_collection.py` to rewrite the PDFs in `sample_docs/collection/`, or pass another
folder. It needs the optional `gen` extra (`pip install -e '.[gen]'`: fpdf2, which brings Pillow); the
project itself never imports this script at run time.

The output is byte-identical on every run with the same fpdf2 and Pillow versions: the creation date, producer
and title are fixed, nothing random is drawn, and fpdf2 derives the file /ID from the content. Every page's
content is checked to fit on its page, so a text edit can never silently push labelled text onto a new page.

Everything here is invented test material. The collection is built so that retrieval settings matter: a
superseded policy beside its replacement, tables, two-column pages, repeated headers and footers, long pages
that the default chunking splits, scanned pages with no text layer, German pages, and near-identical
boilerplate paragraphs in several documents. `collection/README.md` says which page exercises what.
"""

from __future__ import annotations

import datetime
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from PIL import Image, ImageDraw, ImageFont

__all__ = ["DOCUMENTS", "Doc", "write_collection", "write_doc"]

OUT_DIR = Path(__file__).resolve().with_name("collection")
CREATED = datetime.datetime(2025, 6, 2, 9, 0, tzinfo=datetime.timezone.utc)
PRODUCER = "pdf-rag-eval sample_docs/make_collection.py"
AUTHOR = "Northwind Analytics (fictional)"

# Blocks a page is made of:
#   ("title", text) | ("h", text) | ("p", text) | ("table", column widths in mm, rows; the first row is the heading)
#   ("cols", left blocks, right blocks)  two text columns side by side
#   ("scan", lines)                      the page is one picture of these lines: no text layer at all
Block = tuple
Page = Sequence[Block]


@dataclass(frozen=True)
class Doc:
    """One PDF: its file name, title, pages, and the optional header and footer repeated on every page."""

    file: str
    title: str
    pages: Sequence[Page]
    header: str = ""
    footer: str = ""  # "{n}" and "{nb}" become this page's number and the page count
    font_size: float = 10


# --- the documents ------------------------------------------------------------------------------------------

_SCOPE_2023 = ("This policy applies to all employees, contractors and temporary staff of Northwind Analytics GmbH "
               "at the Hamburg and Leipzig sites.")
_SCOPE_2025 = ("This policy applies to all employees, contractors and temporary staff of Northwind Analytics GmbH "
               "at the Hamburg and Leipzig sites and of Northwind Analytics B.V. in Rotterdam.")


def _questions(mailbox: str, approver: str, months: int, what: str = "policy") -> str:
    """The closing paragraph that several documents share almost word for word (near-duplicate boilerplate)."""
    return (f"Questions about this {what} should be sent to {mailbox}. Exceptions must be requested in writing "
            f"and approved by {approver} before the activity takes place. Breaches of this {what} may lead to "
            f"disciplinary action. This {what} is reviewed every {months} months by its owner.")


PROCUREMENT_2023 = Doc(
    "procurement-policy-2023.pdf", "Northwind Analytics - Procurement Policy, version 3.0",
    [
        [("title", "Northwind Analytics - Procurement Policy"),
         ("p", "Version 3.0, effective 1 February 2023. Owner: Jonas Albrecht, Head of Procurement. Approved by the "
               "management board on 12 January 2023."),
         ("h", "1. Purpose and scope"),
         ("p", "This policy sets out how Northwind Analytics buys goods and services from third parties. "
               + _SCOPE_2023),
         ("p", "The policy covers every purchase paid by the company, including software subscriptions, cloud "
               "services, external consultants, office supplies and event services. Purchases of client-specific "
               "data sets are governed by the data licensing guideline and are out of scope here."),
         ("h", "2. Principles"),
         ("p", "Every purchase must have a business purpose, a budget owner and a cost centre before an order is "
               "placed. Orders are placed through the purchasing system; verbal orders are not permitted. Employees "
               "must not split a purchase into smaller orders to stay below an approval threshold."),
         ("p", "Conflicts of interest must be declared before a supplier is selected. An employee who is related "
               "to a supplier's owner or holds shares in a supplier must not take part in the selection.")],
        [("h", "3. Thresholds and quotes"),
         ("p", "Purchases up to EUR 2,500 (net) may be ordered directly from a suitable supplier without comparison "
               "quotes."),
         ("p", "For purchases above EUR 2,500 and up to EUR 10,000, at least two written quotes must be obtained and "
               "attached to the purchase request."),
         ("p", "Above EUR 10,000, at least three written quotes are required, and the Procurement team leads the "
               "negotiation."),
         ("p", "Where only one supplier can deliver, for example for licence renewals of software already in use, a "
               "single-source justification signed by the budget owner replaces the quotes."),
         ("h", "4. Approval"),
         ("p", "Purchase requests are approved in the purchasing system according to their total value over the "
               "whole contract term. The department head approves requests up to EUR 20,000. Requests above "
               "EUR 20,000 also require the approval of the Chief Financial Officer."),
         ("p", "Nobody may approve a request that they raised themselves or that benefits them personally.")],
        [("h", "5. Suppliers"),
         ("p", "New suppliers are set up by the Procurement team after a sanctions screening and a check of the "
               "company register. Supplier onboarding takes up to 10 working days, so new suppliers should be "
               "requested early."),
         ("p", "Framework agreements may be concluded for a term of up to 3 years. Longer terms need the approval of "
               "the Chief Financial Officer."),
         ("p", "Standard payment terms are 30 days net from receipt of a correct invoice. Shorter payment terms may "
               "only be agreed with small suppliers that have fewer than 10 employees."),
         ("h", "6. Purchase cards"),
         ("p", "Purchase cards may be used for small purchases where an order in the purchasing system is "
               "impractical. The purchase card limit is EUR 1,000 per transaction and EUR 4,000 per calendar month. "
               "Receipts must be uploaded within 10 days of the card statement.")],
        [("h", "7. Gifts and hospitality"),
         ("p", "Employees may accept gifts from suppliers worth up to EUR 35 per supplier per year. Gifts above this "
               "value must be declined or handed to the compliance officer. Invitations to meals are acceptable if "
               "they are customary and not connected to an ongoing tender."),
         ("h", "8. Sustainability"),
         ("p", "Where quality and price are comparable, suppliers with a documented environmental management system "
               "should be preferred. Procurement reviews the environmental practices of the 20 largest suppliers "
               "once a year."),
         ("h", "9. Records"),
         ("p", "Quotes, approvals and contracts are stored in the purchasing system and kept for 10 years after the "
               "end of the contract.")],
        [("h", "10. Questions and exceptions"),
         ("p", _questions("procurement@northwind-analytics.example", "the Chief Financial Officer", 24)),
         ("h", "Revision history"),
         ("table", (25, 40, 105), [
             ("Version", "Effective", "Change"),
             ("1.0", "1 July 2018", "First procurement policy"),
             ("2.0", "1 September 2020", "Purchasing system introduced"),
             ("3.0", "1 February 2023", "Quote thresholds raised; purchase cards introduced"),
         ])],
    ])

PROCUREMENT_2025 = Doc(
    "procurement-policy-2025.pdf", "Northwind Analytics - Procurement Policy, version 4.0",
    [
        [("title", "Northwind Analytics - Procurement Policy"),
         ("p", "Version 4.0, effective 1 April 2025. Owner: Jonas Albrecht, Head of Procurement. Approved by the "
               "management board on 3 March 2025. This version replaces version 3.0 of 1 February 2023."),
         ("h", "1. Purpose and scope"),
         ("p", "This policy sets out how Northwind Analytics buys goods and services from third parties. "
               + _SCOPE_2025),
         ("p", "The policy covers every purchase paid by the company, including software subscriptions, cloud "
               "services, external consultants, office supplies and event services. Purchases of client-specific "
               "data sets are governed by the data licensing guideline and are out of scope here."),
         ("h", "2. Principles"),
         ("p", "Every purchase must have a business purpose, a budget owner and a cost centre before an order is "
               "placed. Orders are placed through the purchasing system; verbal orders are not permitted. Employees "
               "must not split a purchase into smaller orders to stay below an approval threshold."),
         ("p", "Conflicts of interest must be declared before a supplier is selected. An employee who is related "
               "to a supplier's owner or holds shares in a supplier must not take part in the selection.")],
        [("h", "3. Thresholds and quotes"),
         ("p", "Purchases up to EUR 5,000 (net) may be ordered directly from a suitable supplier without comparison "
               "quotes."),
         ("p", "For purchases above EUR 5,000 and up to EUR 25,000, at least two written quotes must be obtained and "
               "attached to the purchase request."),
         ("p", "Above EUR 25,000, at least three written quotes are required, and the Procurement team leads the "
               "negotiation."),
         ("p", "Where only one supplier can deliver, for example for licence renewals of software already in use, a "
               "single-source justification signed by the budget owner replaces the quotes."),
         ("h", "4. Approval"),
         ("p", "Purchase requests are approved in the purchasing system according to their total value over the "
               "whole contract term. The department head approves requests up to EUR 15,000. Requests above "
               "EUR 15,000 and up to EUR 100,000 also require the approval of the Chief Financial Officer. Requests "
               "above EUR 100,000 are decided by the management board."),
         ("p", "Nobody may approve a request that they raised themselves or that benefits them personally.")],
        [("h", "5. Suppliers"),
         ("p", "New suppliers are set up by the Procurement team after a sanctions screening and a check of the "
               "company register. Supplier onboarding takes up to 5 working days, so new suppliers should be "
               "requested early."),
         ("p", "Framework agreements may be concluded for a term of up to 4 years. Longer terms need the approval of "
               "the Chief Financial Officer."),
         ("p", "Standard payment terms are 45 days net from receipt of a correct invoice. Small suppliers that have "
               "fewer than 10 employees are paid within 14 days."),
         ("h", "6. Purchase cards"),
         ("p", "Purchase cards may be used for small purchases where an order in the purchasing system is "
               "impractical. The purchase card limit is EUR 1,500 per transaction and EUR 6,000 per calendar month. "
               "Receipts must be uploaded within 7 days of the card statement."),
         ("h", "7. Software that processes client data"),
         ("p", "Any software or cloud service that will process client data needs a security review by the IT "
               "security team before the order is placed. The review takes up to 15 working days.")],
        [("h", "8. Gifts and hospitality"),
         ("p", "Employees may accept gifts from suppliers worth up to EUR 50 per supplier per year. Gifts above this "
               "value must be declined or handed to the compliance officer. Invitations to meals are acceptable if "
               "they are customary and not connected to an ongoing tender."),
         ("h", "9. Sustainability"),
         ("p", "Suppliers with an annual spend above EUR 50,000 must complete the supplier sustainability "
               "self-assessment before a contract is renewed. A supplier scoring below 45 of 100 points needs an "
               "improvement plan agreed with Procurement."),
         ("h", "10. Records"),
         ("p", "Quotes, approvals and contracts are stored in the purchasing system and kept for 10 years after the "
               "end of the contract.")],
        [("h", "11. Questions and exceptions"),
         ("p", _questions("procurement@northwind-analytics.example", "the Chief Financial Officer", 12)),
         ("h", "Revision history"),
         ("table", (25, 40, 105), [
             ("Version", "Effective", "Change"),
             ("2.0", "1 September 2020", "Purchasing system introduced"),
             ("3.0", "1 February 2023", "Quote thresholds raised; purchase cards introduced"),
             ("4.0", "1 April 2025", "New thresholds; Rotterdam in scope; security review for software"),
         ])],
    ])

_QM_HEADER = "Northwind Analytics | Quality Management Manual QM-01 | Revision 7 | Valid from 1 March 2025"
_QM_FOOTER = ("Printed copies are uncontrolled; the valid version is kept in the document portal. "
              "Page {n} of {nb}")

QUALITY_MANUAL = Doc(
    "quality-manual.pdf", "Quality Management Manual QM-01, revision 7",
    header=_QM_HEADER, footer=_QM_FOOTER,
    pages=[
        [("title", "Quality Management Manual"),
         ("h", "1. Purpose of this manual"),
         ("p", "This manual describes the quality management system of Northwind Analytics for analytics projects, "
               "data products and the client data platform. It follows the structure of ISO 9001:2015 so that "
               "auditors can map each section to the standard."),
         ("p", "The ISO 9001 certificate was renewed on 18 November 2024 and is valid until 17 November 2027. The "
               "certification body is Nordcert Pruefgesellschaft, which carries out a surveillance audit every "
               "year in the second half of November."),
         ("h", "2. Quality policy"),
         ("p", "We deliver analyses that our clients can reproduce and trust. Every figure we hand over can be "
               "traced back to its source data, and every model comes with its validation results."),
         ("p", "The quality objectives for 2025 are an on-time delivery rate of at least 95 percent and a client "
               "satisfaction score of at least 8.2 out of 10.")],
        [("h", "3. Organisation and responsibilities"),
         ("p", "The Head of Quality, Dr. Miriam Okafor, is responsible for this manual and reports directly to the "
               "management board. She may stop the release of any deliverable that has not passed its quality "
               "checks."),
         ("p", "The quality board consists of the Head of Quality, the heads of the delivery units and the Head of "
               "Platform Operations. It meets quarterly, in the first week of January, April, July and October, "
               "and decides on the audit programme and on corrective actions that affect several units."),
         ("p", "Each delivery team names a quality champion, who spends about 10 percent of their working time on "
               "quality tasks such as reviewing checklists and coaching new colleagues."),
         ("p", "Project leads are responsible for the quality of their own deliverables. The quality function does "
               "not replace the review inside the project; it checks that the review took place.")],
        [("h", "4. Document control"),
         ("p", "Controlled documents are numbered by type: QM for this manual, PR for procedures, WI for work "
               "instructions and FO for forms, followed by a two-digit number such as PR-07."),
         ("p", "Every controlled document is reviewed at least every 24 months by its owner. Changes are approved "
               "by the document owner and the Head of Quality before they are published in the document portal."),
         ("p", "When a document is replaced, the old revision is archived, marked as withdrawn and kept for 10 "
               "years. Only the current revision may be used for project work.")],
        [("h", "5. Internal audits"),
         ("p", "The quality board approves the internal audit programme for the following year every December. "
               "Every process is audited at least once in 3 years; processes with major findings are audited "
               "again within 12 months."),
         ("p", "Audits are carried out by a pool of 12 trained internal auditors. Auditors must not audit their "
               "own work or the work of their own team."),
         ("p", "The audit report is issued within 10 working days after the closing meeting. Major findings must be "
               "closed within 30 days and minor findings within 90 days.")],
        [("h", "6. Nonconformities and corrective action"),
         ("p", "A nonconformity is any deviation from a requirement: a wrong figure in a delivered report, a "
               "skipped review step, a data pipeline that loaded incomplete data, or a client commitment that was "
               "not kept. Every employee who notices a nonconformity must record it in the quality log within 2 "
               "working days, even if it has already been corrected. Recording a nonconformity is never a reason "
               "for blame; unrecorded problems are the real risk."),
         ("p", "Nonconformities are classified as critical, major or minor. A critical nonconformity is one that "
               "has reached a client and could change a client decision, or that affects personal data. A major "
               "nonconformity has reached a client without that effect, or has occurred in the same process three "
               "times within six months. All other nonconformities are minor. The Head of Quality confirms the "
               "classification of every critical and major nonconformity within one working day."),
         ("p", "For every major nonconformity a root-cause analysis is carried out with the five-whys method. For "
               "every critical nonconformity an 8D report is prepared by a team of at least three people, one of "
               "whom must come from outside the affected unit. The root cause must be documented within 15 "
               "working days of recording the nonconformity, and the corrective actions are entered in the quality "
               "log with an owner and a due date."),
         ("p", "Corrections and corrective actions are different things. A correction fixes the problem at hand, "
               "for example a reissued report; a corrective action removes the cause, for example an added "
               "automated check in the pipeline. Both are recorded. The effectiveness of each corrective action is "
               "checked 3 months after it was completed, by someone who did not implement it. If the same problem "
               "has occurred again, the nonconformity is reopened and the analysis is repeated."),
         ("p", "The quality log is reviewed by the quality board at every meeting. Nonconformities that have been "
               "open for more than 60 days are listed by name, with their owner, in the board minutes.")],
        [("h", "7. Client complaints"),
         ("p", "Every client complaint, however it arrives, is entered in the complaint register by the person who "
               "receives it. The client receives an acknowledgement within 1 working day, naming the person who "
               "owns the complaint."),
         ("p", "The complaint owner sends the client a final response within 20 working days. If the investigation "
               "takes longer, the client is told the reason and a new date."),
         ("p", "A complaint with a possible financial impact above EUR 10,000 is escalated to the management board "
               "within 2 working days. Each complaint is also recorded as a nonconformity.")],
        [("h", "8. Competence and training"),
         ("p", "New employees complete the quality onboarding training within their first 30 days. All employees "
               "complete an annual refresher e-learning of about 45 minutes by 31 October each year."),
         ("p", "Data analysts and data scientists complete the course Reproducible Analysis within 6 months of "
               "joining. Internal auditors attend a two-day auditor training and then observe two audits before "
               "they lead one."),
         ("p", "Training records are kept in the learning platform for 5 years after an employee leaves the "
               "company.")],
        [("h", "9. Review and validation of client deliverables"),
         ("p", "Every client deliverable is checked under the four-eyes principle: a second qualified person reviews "
               "it before it leaves the company."),
         ("p", "Statistical and machine-learning models are reviewed by an independent peer and validated on a "
               "holdout sample of at least 5 percent of the records, with a minimum of 200 records."),
         ("p", "Dashboards are tested against the source figures before release; a difference of more than 0.5 "
               "percent in any key figure blocks the release. The project lead signs the release note.")],
        [("h", "10. Quality indicators"),
         ("p", "The quality board tracks the following indicators. The 2024 results were reported to the management "
               "review in November 2024."),
         ("table", (80, 45, 45), [
             ("Indicator", "Target", "Result 2024"),
             ("On-time delivery", "95.0%", "93.1%"),
             ("Client satisfaction (0-10)", "8.2", "8.4"),
             ("Complaints per 100 projects", "2.0 or fewer", "1.6"),
             ("Major audit findings closed on time", "100%", "88%"),
             ("Deliverables returned for rework", "5.0% or fewer", "6.2%"),
             ("Training completion", "98%", "99.3%"),
         ]),
         ("p", "An indicator that misses its target for two quarters in a row gets an improvement project with an "
               "owner from the quality board.")],
        [("h", "11. Management review and improvement"),
         ("p", "The management board reviews the quality management system twice a year, in May and November. "
               "Improvement ideas from any employee are collected on the Better Every Day board and answered "
               "within 10 working days. The idea of the year receives a prize of EUR 1,000, chosen by a vote of "
               "all employees in December."),
         ("p", "The inputs to the management review are the quality indicators, audit results, client complaints, "
               "the status of corrective actions, changes in client requirements and the results of the previous "
               "review. The outputs are decisions on objectives, resources and improvement projects, recorded in "
               "minutes that are published in the document portal within 2 weeks."),
         ("h", "12. Questions and exceptions"),
         ("p", _questions("quality@northwind-analytics.example", "the Head of Quality", 24, "manual"))],
    ])

CATALOGUE = Doc(
    "service-catalogue-2025.pdf", "Northwind Analytics - Client Service Catalogue 2025",
    [
        [("title", "Client Service Catalogue 2025"),
         ("p", "This catalogue lists the services Northwind Analytics offers to its clients and their list prices. "
               "It is valid from 1 January to 31 December 2025. All prices are in EUR, excluding VAT, and apply "
               "unless a client contract says otherwise."),
         ("h", "Our services"),
         ("p", "Northwind Data Platform: a hosted platform on which clients store, prepare and share their data, "
               "with dashboards, scheduled pipelines and a managed SQL engine. The platform runs in two data "
               "centres in Frankfurt and Amsterdam."),
         ("p", "Analytics projects: fixed-scope or time-and-material projects delivered by our consultants, from "
               "data audits to forecasting models."),
         ("p", "Training: public and in-house courses for analysts, engineers and managers."),
         ("p", "Quotes for projects and in-house training are prepared by the sales team at "
               "sales@northwind-analytics.example. A quote is binding for 60 days.")],
        [("h", "Platform support tiers"),
         ("p", "Every platform subscription includes one of three support tiers. The first response time is "
               "measured from the moment a ticket is created in the support portal."),
         ("table", (28, 46, 30, 35, 35), [
             ("Tier", "Support hours", "P1 response", "P2 response", "Monthly fee"),
             ("Essential", "Mon-Fri 09:00-17:00", "4 hours", "1 working day", "EUR 1,200"),
             ("Professional", "Mon-Fri 07:00-20:00", "1 hour", "4 hours", "EUR 2,900"),
             ("Enterprise", "24/7", "30 minutes", "2 hours", "EUR 6,500"),
         ]),
         ("p", "A P1 ticket means the platform is unavailable for all users of the client, or data is being lost. "
               "A P2 ticket means an important function is impaired and no workaround exists. All other tickets "
               "are answered within 2 working days in every tier."),
         ("p", "Support hours are Central European Time. Public holidays in Hamburg count as non-working days for "
               "the Essential and Professional tiers.")],
        [("h", "Availability and service credits"),
         ("p", "Availability is measured per calendar month, excluding announced maintenance. If the target of a "
               "tier is missed, the client receives a credit on the next invoice."),
         ("table", (45, 55, 70), [
             ("Tier", "Availability target", "Credit if missed"),
             ("Essential", "99.5%", "5% of the monthly fee"),
             ("Professional", "99.8%", "10% of the monthly fee"),
             ("Enterprise", "99.95%", "15% of the monthly fee"),
         ]),
         ("p", "If availability falls below 99.0 percent in a month, clients in every tier receive a credit of 25 "
               "percent of the monthly fee. Credits must be claimed within 30 days after the end of the month."),
         ("p", "Maintenance takes place on Sundays between 02:00 and 06:00 and is announced at least 7 days in "
               "advance on the status page.")],
        [("h", "Professional services"),
         ("p", "Consultants are billed per day of eight hours. Travel time is billed at 50 percent of the day rate; "
               "travel expenses are billed at cost."),
         ("table", (90, 50), [
             ("Role", "Day rate"),
             ("Data analyst", "EUR 980"),
             ("Data engineer", "EUR 1,120"),
             ("Project manager", "EUR 1,050"),
             ("Senior consultant", "EUR 1,350"),
             ("Principal consultant", "EUR 1,750"),
         ]),
         ("p", "The minimum engagement is 2 days. Clients who prepay 40 days or more receive a discount of 8 percent "
               "on the day rates. Prepaid days expire 12 months after purchase.")],
        [("h", "Training courses"),
         ("p", "Public courses take place in Hamburg and online. Prices are per participant and include course "
               "material and lunch for classroom courses."),
         ("table", (22, 78, 20, 40), [
             ("Code", "Course", "Days", "Price"),
             ("NW-101", "Platform Basics", "1", "EUR 690"),
             ("NW-201", "SQL for Analysts", "2", "EUR 1,290"),
             ("NW-240", "Dashboard Design", "1", "EUR 750"),
             ("NW-310", "Forecasting with Python", "3", "EUR 2,100"),
             ("NW-420", "Data Governance for Managers", "1", "EUR 980"),
         ]),
         ("p", "A course runs with at least 4 and at most 12 participants. Cancellation is free of charge until 14 "
               "days before the course; after that, the full price is charged, but a colleague may take the place.")],
        [("h", "Platform add-ons"),
         ("table", (80, 45, 40), [
             ("Add-on", "Unit", "Monthly price"),
             ("Additional storage", "per TB", "EUR 85"),
             ("Extra user licence", "per named user", "EUR 39"),
             ("Sandbox environment", "per environment", "EUR 450"),
             ("Private network link", "per link", "EUR 1,100"),
             ("Extended log retention (400 days)", "per account", "EUR 260"),
         ]),
         ("p", "Add-ons can be ordered in the support portal and are available from the next working day. They are "
               "billed monthly together with the subscription.")],
        [("h", "Terms"),
         ("p", "Platform subscriptions have a minimum term of 12 months and renew for a further 12 months unless "
               "cancelled 3 months before the end of the term."),
         ("p", "Invoices are issued monthly in advance and are payable within 30 days. List prices may be adjusted "
               "once a year with 3 months' notice; an increase of more than 5 percent gives the client the right "
               "to cancel."),
         ("p", "Client data is stored only in the European Union. After a subscription ends, the client can export "
               "its data for 60 days; the data is then deleted as described in the data retention policy.")],
    ])


def _newsletter_page(left: list[Block], right: list[Block], top: list[Block] | None = None) -> list[Block]:
    return [*(top or []), ("cols", left, right)]


NEWSLETTER = Doc(
    "newsletter-2025-03.pdf", "Northwind Notes, issue 27, March 2025",
    [
        _newsletter_page(
            top=[("title", "Northwind Notes - Issue 27, March 2025"),
                 ("p", "The staff newsletter of Northwind Analytics. Editor: Lea Hoffmann.")],
            left=[("h", "Leipzig office opens in April"),
                  ("p", "Our second German office opens on 14 April 2025 at Kanalweg 5 in Leipzig. The office has "
                        "40 desks on two floors, three meeting rooms and a roof terrace."),
                  ("p", "Felix Brandt will lead the site. The 18 colleagues who have worked from a coworking space "
                        "in Leipzig since 2023 move in first; the rest of the desks will be filled by new hires "
                        "over the year."),
                  ("p", "An opening party for all staff takes place on 25 April, and a shuttle bus will leave "
                        "Hamburg at 08:00 that morning.")],
            right=[("h", "Employee of the quarter"),
                   ("p", "Aylin Demir, data engineer in the platform team, is our employee of the quarter. She "
                         "moved 140 client pipelines to the new scheduler without a single minute of downtime."),
                   ("p", "Her colleagues praised her careful migration plan and the runbook she wrote for the "
                         "night shifts. Aylin receives an extra day off and a voucher for a cooking class."),
                   ("p", "Nominations for the next quarter can be sent to the editor until 15 June.")]),
        _newsletter_page(
            left=[("h", "Bike leasing starts on 1 April"),
                  ("p", "From 1 April 2025, every employee with a permanent contract can lease up to two bikes "
                        "through our partner RadWerk Leasing. The bikes are paid by salary conversion over 36 "
                        "months."),
                  ("p", "Bikes and e-bikes with a list price of up to EUR 7,000 each are eligible. Northwind pays "
                        "the full insurance and an annual inspection. At the end of the term you can buy the bike "
                        "for 18 percent of its list price."),
                  ("p", "Sign-up is in the HR portal under Benefits.")],
            right=[("h", "Winter charity run"),
                   ("p", "On a cold Saturday in February, 64 runners from Hamburg and Leipzig ran laps around the "
                         "Alster lake for the Elbkinder Foundation, which runs reading clubs for children."),
                   ("p", "Together with the company's matching donation, the run raised EUR 12,400. The fastest "
                         "runner completed 21 kilometres; the most laps were run by the finance team."),
                   ("p", "Thanks to everyone who ran, cheered or baked.")]),
        _newsletter_page(
            left=[("h", "Hackathon results"),
                  ("p", "Nine teams took part in our spring hackathon, which ran for 36 hours in the Hamburg "
                        "office. The winner was Team Lighthouse with a tool that flags unusual supplier invoices "
                        "before they are paid."),
                  ("p", "Second place went to Team Kestrel for a dashboard that explains forecast changes in "
                        "plain language. The winning team receives a budget of EUR 3,000 to turn its prototype "
                        "into a pilot."),
                  ("p", "The next hackathon is planned for 9 and 10 October 2025.")],
            right=[("h", "New faces"),
                   ("p", "We welcomed 11 new colleagues in the first quarter, six of them in the data engineering "
                         "team. Say hello at the Friday breakfast."),
                   ("h", "Ask the data protection officer"),
                   ("p", "Henrik Larsen, our data protection officer, now holds open office hours every Thursday "
                         "from 14:00 to 15:00 in room Alster, or by video call."),
                   ("p", "Bring any question about personal data in projects, from consent forms to deletion "
                         "requests.")]),
        _newsletter_page(
            left=[("h", "Platform release 5.2"),
                  ("p", "Release 5.2 of the Northwind Data Platform went live on 3 March 2025. It adds "
                        "column-level lineage, so users can see which source column feeds each dashboard figure."),
                  ("p", "Queries on large tables run about 30 percent faster thanks to a new caching layer. The "
                        "legacy API version 1 will be switched off on 30 September 2025; clients have been asked "
                        "to move to version 2.")],
            right=[("h", "Dates to remember"),
                   ("p", "8 May: all-hands meeting in Hamburg and online, starting at 16:00."),
                   ("p", "27 June: summer party on the museum ship Elbblick in the harbour."),
                   ("p", "31 October: deadline for the annual quality refresher e-learning."),
                   ("p", "The next issue of Northwind Notes appears in June. Story ideas are welcome.")]),
    ])

STANDORT_DE = Doc(
    "standort-hamburg-de.pdf", "Standortleitfaden Hamburg",
    [
        [("title", "Standortleitfaden Hamburg"),
         ("p", "Dieser Leitfaden gilt für alle Beschäftigten und Gäste der Zentrale von Northwind Analytics in "
               "der Lagerhausstraße 17, 20457 Hamburg."),
         ("h", "Empfang und Besuch"),
         ("p", "Der Empfang im Erdgeschoss ist montags bis freitags von 7:30 bis 18:00 Uhr besetzt."),
         ("p", "Besucherinnen und Besucher müssen spätestens 24 Stunden vorher im Besucherportal angemeldet "
               "werden. Sie erhalten am Empfang einen Tagesausweis und werden während des gesamten Besuchs von der "
               "einladenden Person begleitet."),
         ("p", "Für Gruppen ab 10 Personen ist zusätzlich eine Abstimmung mit dem Facility Management nötig.")],
        [("h", "Zugang und Zugangskarten"),
         ("p", "Das Gebäude ist werktags von 6:00 bis 22:00 Uhr mit der Zugangskarte zugänglich. Am Wochenende ist "
               "der Zutritt nur nach vorheriger Freischaltung durch das Facility Management möglich."),
         ("p", "Eine verlorene Zugangskarte muss sofort dem Sicherheitsdienst unter der Durchwahl 2200 gemeldet "
               "werden, damit sie gesperrt werden kann. Eine Ersatzkarte kostet EUR 25."),
         ("h", "Fahrräder und Duschen"),
         ("p", "Im Fahrradkeller gibt es 60 Stellplätze, davon 8 mit Ladestation für E-Bikes. Der Zugang erfolgt "
               "über den Innenhof. Duschen und Spinde befinden sich im Untergeschoss.")],
        [("h", "Sicherheit im Notfall"),
         ("p", "Bei Feueralarm verlassen alle das Gebäude über die Treppenhäuser. Der Sammelplatz ist der Platz vor "
               "dem Haupteingang an der Lagerhausstraße."),
         ("p", "Auf jeder Etage gibt es mindestens zwei Ersthelfer; die aktuelle Liste hängt am Empfang aus. Ein "
               "Defibrillator befindet sich am Empfang im Erdgeschoss."),
         ("h", "Kantine"),
         ("p", "Die Kantine Speicher im 1. Obergeschoss ist von 11:30 bis 14:00 Uhr geöffnet. Northwind "
               "bezuschusst jedes Mittagessen mit EUR 3,20.")],
    ])


def _scan(*lines: str) -> list[Block]:
    return [("scan", lines)]


FACILITIES = Doc(
    "facilities-notices.pdf", "Northwind Analytics - Facilities notices 2025",
    [
        [("title", "Facilities notice FN-2025-04: Fire drills in 2025"),
         ("p", "Issued by Sabine Krueger, Facilities Manager, on 14 February 2025."),
         ("p", "Unannounced evacuation drills are required by our insurer, but the dates below are shared with "
               "fire wardens so that they can prepare. In Hamburg, fire drills take place on 6 May and 4 November "
               "2025. In Leipzig, the first fire drill takes place on 20 May 2025."),
         ("p", "Each floor needs at least one fire warden per 20 employees. New fire wardens attend a 3-hour "
               "training course with the building's fire safety officer before their first drill."),
         ("p", "During a drill, lifts must not be used. Fire wardens check the toilets and meeting rooms on their "
               "floor and report to the assembly point within 5 minutes of the alarm.")],
        _scan("NORTHWIND ANALYTICS - FACILITIES NOTICE FN-2025-07",
              "",
              "Lift B (Lagerhausstrasse 17) will be out of service",
              "from 12 May to 16 May 2025 for modernisation works.",
              "",
              "Please use Lift A or the stairs during this time.",
              "Goods deliveries are accepted at the rear entrance only,",
              "between 07:00 and 11:00.",
              "",
              "Questions: facilities desk, extension 2150.",
              "",
              "Signed: S. Krueger, Facilities Manager, 28 April 2025"),
        [("title", "Facilities notice FN-2025-08: Meeting room rules"),
         ("p", "Meeting rooms in Hamburg are booked in the calendar system. A single booking may last at most 4 "
               "hours; recurring bookings are allowed for up to 3 months at a time."),
         ("p", "A booked room that nobody has checked into within 15 minutes of the start time is released "
               "automatically for others."),
         ("table", (40, 30, 90), [
             ("Room", "Seats", "Equipment"),
             ("Elbe", "20", "Two screens, ceiling microphones"),
             ("Alster", "8", "Screen, video bar"),
             ("Bille", "4", "Screen"),
         ]),
         ("p", "Rooms must be left tidy. Catering for the Elbe room is ordered at least 2 working days ahead.")],
        _scan("NORTHWIND ANALYTICS - FACILITIES NOTICE FN-2025-09",
              "",
              "New cleaning schedule from 2 June 2025",
              "",
              "Desks on floors 2 to 5 are cleaned on Tuesday and",
              "Friday evenings. Please clear your desk before you",
              "leave on those days; items left on desks are not moved.",
              "",
              "Kitchens are cleaned every weekday at 15:00.",
              "",
              "Signed: S. Krueger, Facilities Manager, 19 May 2025"),
    ])

RUNBOOK = Doc(
    "platform-incident-runbook.pdf", "Northwind Data Platform - Incident Runbook",
    font_size=9.5,
    pages=[
        [("title", "Northwind Data Platform - Incident Runbook"),
         ("p", "Owner: Tomasz Nowak, Head of Platform Operations. Version 2.4, March 2025."),
         ("h", "1. Purpose"),
         ("p", "This runbook describes how the platform operations team detects, handles and learns from incidents "
               "on the Northwind Data Platform. It covers outages and degradations of the hosted platform; security "
               "incidents on employee devices are handled by the IT service desk and are out of scope."),
         ("h", "2. Roles"),
         ("p", "Every incident has an incident commander, who coordinates the response and makes decisions, a "
               "communications lead, who updates clients and the status page, and a scribe, who keeps the "
               "timeline. One person may hold several roles in a small incident."),
         ("p", "The on-call engineer acknowledges an alert within 10 minutes, day or night. If the alert is not "
               "acknowledged, it escalates automatically to the secondary on-call engineer after 10 minutes and to "
               "the Head of Platform Operations after 20 minutes."),
         ("p", "On-call engineers are on duty for one week at a time, from Monday 09:00 to the following Monday "
               "09:00, and receive an on-call allowance of EUR 350 per week.")],
        [("h", "3. Severity levels and first response"),
         ("p", "Every incident is given a severity as soon as it is recognised, and the severity is revised as more "
               "becomes known. SEV1 means the platform is unavailable for all clients, or client data is being "
               "lost or exposed. SEV2 means an important function is degraded for several clients, for example "
               "dashboards failing to load or scheduled pipelines running late by more than an hour. SEV3 means a "
               "single client is affected, or a workaround exists. When in doubt, choose the higher severity: "
               "downgrading later costs nothing, while a late escalation costs trust."),
         ("p", "A SEV1 incident must be declared within 15 minutes of detection. The person who declares it opens "
               "an incident channel in the chat system, named after the date and a short description, and pages "
               "the incident commander on duty. For SEV2 incidents an incident commander is assigned within 30 "
               "minutes; SEV3 incidents are handled by the on-call engineer alone during normal working hours."),
         ("p", "The communications lead posts the first status page update within 20 minutes of declaring a SEV1 "
               "incident and then updates the page every 30 minutes until the incident is resolved, even when "
               "there is nothing new to report. For SEV2 incidents the status page is updated every 60 minutes. "
               "Enterprise clients are also called by their client success manager within 45 minutes of a SEV1 "
               "declaration, because they are entitled to a personal notification under their contracts."),
         ("p", "If a SEV1 incident is not resolved within 1 hour, the incident commander informs the Head of "
               "Platform Operations, who decides whether more engineers are called in. After 2 hours the "
               "management board is informed by phone. No public statement beyond the status page is made without "
               "the approval of the management board."),
         ("p", "Incident commanders hand over after 4 hours at the latest, because decisions get worse with "
               "fatigue. The handover takes place in the incident channel, where the outgoing commander lists the "
               "current hypothesis, the actions in progress and the next status page update. The scribe records "
               "the time of every handover, every decision and every change made to production systems, so that "
               "the timeline can be rebuilt for the postmortem without relying on memory.")],
        [("h", "4. Technical procedures"),
         ("p", "The platform runs in two data centres, a primary and a secondary one. When the primary data centre has "
               "been unavailable for more than 20 minutes and recovery is not in sight, the incident commander may "
               "order a failover to the secondary data centre. A failover takes about 25 minutes, and queries that "
               "were running at the moment of the switch must be restarted by the clients."),
         ("p", "Before a failover, the incident commander checks that replication to the secondary data centre was "
               "healthy at the time of the outage. If replication was more than 15 minutes behind, the failover "
               "needs the approval of the Head of Platform Operations, because recent client data would be missing "
               "in the secondary data centre."),
         ("p", "Database snapshots are taken every 4 hours and kept for 35 days. In addition, point-in-time "
               "recovery is possible for any moment within the last 7 days. A restore from a snapshot is only "
               "started with the approval of the incident commander and is recorded in the incident timeline, "
               "because data written after the snapshot may be lost."),
         ("p", "If a release is suspected to have caused the incident, the incident commander decides within 30 "
               "minutes whether to roll it back. Rolling back is the default; fixing forward needs a reason that "
               "the scribe writes down. During any SEV1 or SEV2 incident all other deployments are frozen until "
               "the incident is resolved."),
         ("p", "Outside incidents, no releases are deployed on Fridays after 15:00 or on the day before a public "
               "holiday in Hamburg. Emergency changes during that time need the approval of the Head of Platform "
               "Operations and a second engineer who watches the deployment."),
         ("p", "When client data may have been exposed, the incident commander involves the data protection "
               "officer at once, whatever the severity, because notification deadlines start when the exposure "
               "becomes known. Logs, snapshots and the affected storage are preserved and must not be cleaned up "
               "until the data protection officer agrees. Credentials that may have leaked are rotated within 2 "
               "hours, and the rotation is recorded in the timeline.")],
        [("h", "5. After the incident"),
         ("p", "For every SEV1 and SEV2 incident the incident commander writes a blameless postmortem. The draft is "
               "due within 5 working days after the incident is resolved and is discussed in the weekly "
               "operations review."),
         ("p", "Each action item from the postmortem gets an owner and a due date no later than 30 days after the "
               "review. Enterprise clients receive a written incident report within 10 working days."),
         ("table", (60, 50, 50), [
             ("Measure", "Target SEV1", "Target SEV2"),
             ("Time to resolve", "4 hours", "1 working day"),
             ("Status page updates on time", "95%", "90%"),
             ("Repeat incidents within 90 days", "none", "at most 1"),
         ]),
         ("p", "The targets are reviewed every quarter against the incidents of the last twelve months.")],
        [("h", "6. Contacts"),
         ("p", "Platform operations on-call: use the paging tool or call the on-call line listed in the paging "
               "tool. Client success managers are listed in the client directory."),
         ("h", "7. Questions and exceptions"),
         ("p", _questions("platform-ops@northwind-analytics.example", "the Head of Platform Operations", 6,
                          "runbook"))],
    ])

RETENTION = Doc(
    "data-retention-policy.pdf", "Northwind Analytics - Data Retention Policy",
    [
        [("title", "Northwind Analytics - Data Retention Policy"),
         ("p", "Version 1.2, effective 1 January 2025. Owner: Henrik Larsen, data protection officer."),
         ("h", "1. Purpose and scope"),
         ("p", "This policy sets out how long Northwind Analytics keeps records and how they are deleted. "
               + _SCOPE_2025),
         ("p", "It covers records in every form: files on the data platform, documents in the document portal, "
               "emails, paper files and backups."),
         ("h", "2. Principles"),
         ("p", "We keep personal data only as long as we need it for the purpose for which it was collected, or "
               "as long as the law requires. When a retention period ends, the record is deleted or anonymised "
               "within 30 days.")],
        [("h", "3. Retention periods"),
         ("p", "The following periods apply unless a client contract or a legal hold requires something else."),
         ("table", (65, 35, 70), [
             ("Record", "Kept for", "Counted from"),
             ("Client raw data on the platform", "90 days", "end of the contract"),
             ("Client deliverables", "3 years", "delivery"),
             ("Invoices and accounting records", "10 years", "end of the financial year"),
             ("Job application documents", "6 months", "filling of the position"),
             ("Personnel files", "3 years", "end of employment"),
             ("Visitor log", "30 days", "date of the visit"),
             ("Video recordings at entrances", "72 hours", "recording"),
             ("Platform audit logs", "13 months", "creation"),
         ]),
         ("p", "Clients who book the extended log retention add-on keep their own platform logs for longer; that "
               "does not change the period for our audit logs.")],
        [("h", "4. Deletion"),
         ("p", "A client's request to delete its data is completed within 30 days. On request, the client receives "
               "a certificate of deletion signed by the data protection officer."),
         ("p", "Backups are not edited. They expire on their own after 35 days, so deleted data disappears from all "
               "backups within 35 days of its deletion."),
         ("p", "Paper records are shredded in locked bins that an external service empties every two weeks."),
         ("h", "5. Legal hold"),
         ("p", "When litigation or an investigation is expected, the data protection officer places the relevant "
               "records under legal hold. Records under legal hold must not be deleted, and only the data "
               "protection officer can lift a hold.")],
        [("h", "6. Requests from individuals"),
         ("p", "Requests from individuals for access to their personal data are answered within one month. The "
               "request is logged by the data protection team on the day it arrives."),
         ("h", "7. Questions and exceptions"),
         ("p", _questions("privacy@northwind-analytics.example", "the data protection officer", 12))],
    ])

DOCUMENTS: tuple[Doc, ...] = (PROCUREMENT_2023, PROCUREMENT_2025, QUALITY_MANUAL, CATALOGUE, NEWSLETTER,
                              STANDORT_DE, FACILITIES, RUNBOOK, RETENTION)


# --- rendering ----------------------------------------------------------------------------------------------

_MARGIN_MM = 18
_BOTTOM_LIMIT_MM = 297 - 22  # content must end above the footer area
_SCAN_DPI = 120


class _Pdf(FPDF):
    """FPDF with the document's repeated header and footer (boilerplate on every page)."""

    def __init__(self, doc: Doc):
        super().__init__(format="A4", unit="mm")
        self.doc = doc

    def header(self) -> None:
        if self.doc.header:
            self.set_font("Helvetica", size=8)
            self.cell(0, 5, self.doc.header, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            self.ln(3)

    def footer(self) -> None:
        if self.doc.footer:
            self.set_y(-15)
            self.set_font("Helvetica", size=8)
            self.cell(0, 5, self.doc.footer.replace("{n}", str(self.page_no())), new_x=XPos.LMARGIN,
                      new_y=YPos.NEXT)


def write_doc(doc: Doc, path: str | Path) -> Path:
    """Render one document to `path`. Raises ValueError when a page's content does not fit on it."""
    pdf = _Pdf(doc)
    pdf.set_auto_page_break(False)
    pdf.set_margins(_MARGIN_MM, _MARGIN_MM, _MARGIN_MM)
    pdf.set_creation_date(CREATED)
    pdf.set_producer(PRODUCER)
    pdf.set_creator(PRODUCER)
    pdf.set_author(AUTHOR)
    pdf.set_title(doc.title)
    for number, page in enumerate(doc.pages, start=1):
        pdf.add_page()
        if page and page[0][0] == "scan":
            _scan_page(pdf, page[0][1])
            continue
        _blocks(pdf, page, doc.font_size)
        if pdf.get_y() > _BOTTOM_LIMIT_MM:
            raise ValueError(f"{doc.file}: page {number} overflows ({pdf.get_y():.0f} mm); shorten it or split it")
    path = Path(path)
    pdf.output(str(path))
    return path


def _blocks(pdf: FPDF, blocks: Sequence[Block], size: float) -> None:
    width = pdf.w - pdf.l_margin - pdf.r_margin
    for block in blocks:
        kind = block[0]
        if kind == "title":
            pdf.set_font("Helvetica", "B", size + 6)
            pdf.multi_cell(width, (size + 6) * 0.5, block[1], align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(3)
        elif kind == "h":
            pdf.set_font("Helvetica", "B", size + 1.5)
            pdf.multi_cell(width, (size + 1.5) * 0.5, block[1], align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(1.5)
        elif kind == "p":
            pdf.set_font("Helvetica", "", size)
            pdf.multi_cell(width, size * 0.48, block[1], align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(2.5)
        elif kind == "table":
            _table(pdf, block[1], block[2], size)
        elif kind == "cols":
            _columns(pdf, block[1], block[2], size)
        else:
            raise ValueError(f"unknown block kind {kind!r}")


def _table(pdf: FPDF, widths: Sequence[float], rows: Sequence[Sequence[str]], size: float) -> None:
    pdf.set_font("Helvetica", "", size)
    with pdf.table(col_widths=tuple(widths), width=sum(widths), align="LEFT", text_align="LEFT",
                   line_height=size * 0.55, first_row_as_headings=True) as table:
        for values in rows:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(3)


def _columns(pdf: FPDF, left: Sequence[Block], right: Sequence[Block], size: float) -> None:
    """Two columns: the left one is written completely, then the right one from the same top."""
    top = pdf.get_y()
    gap = 8
    col = (pdf.w - 2 * _MARGIN_MM - gap) / 2
    bottoms = []
    for x, blocks in ((_MARGIN_MM, left), (_MARGIN_MM + col + gap, right)):
        pdf.set_left_margin(x)
        pdf.set_right_margin(pdf.w - x - col)
        pdf.set_xy(x, top)
        _blocks(pdf, blocks, size)
        bottoms.append(pdf.get_y())
    pdf.set_margins(_MARGIN_MM, _MARGIN_MM, _MARGIN_MM)
    pdf.set_xy(_MARGIN_MM, max(bottoms))


def _scan_page(pdf: FPDF, lines: Sequence[str]) -> None:
    """Draw the lines into a greyscale picture and place it over the whole page: the page has no text layer."""
    width_px, height_px = round(210 / 25.4 * _SCAN_DPI), round(297 / 25.4 * _SCAN_DPI)
    image = Image.new("L", (width_px, height_px), 246)  # off-white, like paper on a scanner
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=22)
    y = 120
    for line in lines:
        draw.text((100, y), line, fill=20, font=font)
        y += 38
    draw.rectangle((90, y + 20, 420, y + 90), outline=60, width=3)  # the signature box of the paper notice
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    pdf.image(buffer, x=0, y=0, w=210, h=297)


def write_collection(out_dir: str | Path = OUT_DIR) -> list[Path]:
    """Write every document of the collection into `out_dir` (created if missing); return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [write_doc(doc, out / doc.file) for doc in DOCUMENTS]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python sample_docs/make_collection.py [OUT_DIR]   (default: sample_docs/collection)",
              file=sys.stderr)
        return 2
    paths = write_collection(args[0] if args else OUT_DIR)
    pages = sum(len(doc.pages) for doc in DOCUMENTS)
    print(f"wrote {len(paths)} PDFs ({pages} pages) to {paths[0].parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
