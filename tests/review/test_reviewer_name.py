"""Whose reviews these are (issue #30, 7): `--reviewer`, else the name a person gave once on a terminal and that is
remembered in the cache folder; never the login account, silently or otherwise."""

from __future__ import annotations

import csv
import io
import os

import pytest

from harness.cli import main
from harness.cli.common import reviewer_name
from harness.evaluate import run_evaluation
from harness.review.reviewer import checked_name, remember_reviewer, remembered_reviewer, reviewer_file
from harness.review.store import read_reviews, reviews_path
from harness.settings import RunSettings
from pdfrag.errors import InputError
from tests.conftest import HANDBOOK, sample_cases
from tests.support import draft_rules as rules

LOGIN = "login-account-7"  # the OS account's name (a real test path may hold `root`: pytest-of-root)


class _Terminal(io.StringIO):
    """Typed lines on what looks like a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _login_is_root(monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: LOGIN)  # `root`, say, the account a container runs as
    monkeypatch.setenv("USER", LOGIN)
    monkeypatch.setenv("LOGNAME", LOGIN)


@pytest.fixture
def run_dir(tmp_path):
    settings = RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / "out"),
                           system="offline")
    return run_evaluation(settings).run_dir


def test_asked_once_on_a_terminal_then_remembered(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", _Terminal("Ann Lee\nq\n"))
    assert main(["review", str(run_dir)]) == 0
    out = capsys.readouterr()
    assert "your name for your reviews" in out.out and "remembered as Ann Lee" in out.err
    assert remembered_reviewer() == "Ann Lee" and reviewer_file().read_text() == "Ann Lee\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))  # later, not even a terminal: the name is remembered
    assert main(["review", str(run_dir)]) == 0
    out = capsys.readouterr()
    assert "to review as Ann Lee" in out.out and "reviewing as Ann Lee (remembered in" in out.err
    assert "your name for your reviews" not in out.out and LOGIN not in out.out + out.err


def test_a_review_by_the_remembered_name_carries_it(run_dir, tmp_path, capsys):
    remember_reviewer("ann")
    sheet = tmp_path / "r.csv"
    assert main(["review", str(run_dir), "--export", str(sheet)]) == 0
    assert "for reviewer ann to" in capsys.readouterr().out
    lines = list(csv.DictReader(sheet.open(encoding="utf-8")))
    first = next(r for r in lines if r["claim"])
    for line in lines:
        if (line["case_id"], line["answer_sha256"]) == (first["case_id"], first["answer_sha256"]):
            line["verdict"] = "unsupported"
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    assert main(["review", str(run_dir), "--import", str(sheet)]) == 0
    book = read_reviews(reviews_path(sample_cases(tmp_path)))
    assert {r.reviewer for r in book.reviews.values()} == {"ann"}


def test_without_a_terminal_or_a_name_a_walk_names_the_flag_and_never_the_login(run_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["review", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "give --reviewer NAME" in err and LOGIN not in err
    assert main(["review", str(run_dir), "--reviewer", "bob"]) == 0  # --reviewer: for this command, not remembered
    assert remembered_reviewer() is None


def test_an_import_whose_lines_name_nobody_is_refused(run_dir, tmp_path, monkeypatch, capsys):
    sheet = tmp_path / "r.csv"
    assert main(["review", str(run_dir), "--export", str(sheet)]) == 0
    assert "with a blank reviewer column" in capsys.readouterr().out
    lines = list(csv.DictReader(sheet.open(encoding="utf-8")))
    for line in lines:
        line["verdict"] = "unsupported" if line["claim"] else "none"
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    assert main(["review", str(run_dir), "--import", str(sheet)]) == 2
    assert "blank reviewer column" in capsys.readouterr().err
    assert not reviews_path(sample_cases(tmp_path)).exists()  # nothing imported
    for line in lines:
        line["reviewer"] = "carol"  # a sheet that names its reviewer imports without a name of ours
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    assert main(["review", str(run_dir), "--import", str(sheet)]) == 0
    assert {r.reviewer for r in read_reviews(reviews_path(sample_cases(tmp_path))).reviews.values()} == {"carol"}


def test_draft_review_export_says_whose_decisions_it_holds(drafts_file, tmp_path, capsys):
    sheet = tmp_path / "d.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    assert "with the decisions of ann filled in" in out and "'s decisions" not in out
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet)]) == 0
    assert "with no one's decisions filled in" in capsys.readouterr().out
    rows = rules.csv_rows(sheet)
    rules.find_row(rows, rules.GOOD_HOTEL)["decision"] = "accepted"
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 2
    assert "reviewer: blank, and no reviewer name is known" in capsys.readouterr().err


def test_draft_review_walk_asks_for_the_name_once(drafts_file, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", _Terminal("ann\nq\n"))
    assert main(["draft", "review", str(drafts_file)]) == 0
    assert remembered_reviewer() == "ann" and LOGIN not in capsys.readouterr().out


@pytest.mark.parametrize("name, problem", [("", "empty"), ("   ", "empty"), ("judge:qwen3@abc", "judge"),
                                           ("ann\x1b[2J", "control characters"), ("x" * 101, "101 characters")])
def test_names_a_person_cannot_review_under(name, problem):
    with pytest.raises(InputError, match=problem):
        checked_name(name)


def test_a_bad_name_typed_is_asked_again_and_end_of_input_stops(monkeypatch):
    answers = iter(["", "judge:me", "ann"])
    assert reviewer_name(None, ask=lambda prompt: next(answers), interactive=True) == "ann"
    os.remove(reviewer_file())

    def ends(prompt: str) -> str:
        raise EOFError

    with pytest.raises(InputError, match="--reviewer"):
        reviewer_name(None, ask=ends, interactive=True)


@pytest.mark.parametrize("content", [b"", b"judge:x\n", b"\xff\xfe", b"a" * 5000, b"ann\x07\n"])
def test_a_broken_remembered_file_is_asked_again_never_trusted(content):
    reviewer_file().parent.mkdir(parents=True, exist_ok=True)
    reviewer_file().write_bytes(content)
    assert remembered_reviewer() is None
    assert reviewer_name(None, ask=lambda prompt: "ann", interactive=True) == "ann"
    assert remembered_reviewer() == "ann"


def test_a_linked_remembered_file_is_not_read(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("mallory\n")
    reviewer_file().parent.mkdir(parents=True, exist_ok=True)
    reviewer_file().symlink_to(target)
    assert remembered_reviewer() is None
