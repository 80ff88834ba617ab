"""`rag-eval sweep` end to end against the test server (chat rule: overlap_rule unless stated): run directories,
leaderboard, reuse of embeddings and answers, repeats, dry-run counts, resume checks."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.runs import read_manifest, read_rows
from harness.sweep.leaderboard_files import read_leaderboard
from tests.conftest import HANDBOOK, sample_cases

CELLS = ["chunk-size=600,top-k=2", "chunk-size=600,top-k=4", "chunk-size=1000,top-k=2", "chunk-size=1000,top-k=4",
         "chunk-size=2000,top-k=2", "chunk-size=2000,top-k=4"]


def sweep_file(tmp_path: Path, text: str = "chunk-size = [600, 1000, 2000]\ntop-k = [2, 4]\nk = [1, 2]\n") -> str:
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def base(server, tmp_path, out: str = "sweeps") -> list[str]:
    return ["--host", server.url, "--docs", str(HANDBOOK), "--cases", cases_once(tmp_path), "--k", "1", "2", "--out",
            str(tmp_path / out)]


def cases_once(tmp_path: Path) -> str:
    path = tmp_path / "sample-cases" / "cases.jsonl"
    return str(path) if path.exists() else sample_cases(tmp_path)


def embed_inputs(server) -> list[str]:
    out = []
    for body in server.bodies("/api/embed"):
        out += body["input"] if isinstance(body["input"], list) else [body["input"]]
    return out


def only_sweep(tmp_path: Path, out: str = "sweeps") -> Path:
    [found] = [p for p in (tmp_path / out).iterdir() if p.is_dir()]
    return found


def test_a_3x2_sweep_writes_six_runs_and_a_corrected_leaderboard(server, tmp_path, capsys):
    assert main(["sweep", sweep_file(tmp_path), *base(server, tmp_path)]) == 0
    printed = capsys.readouterr().out
    sweep_dir = only_sweep(tmp_path)
    manifest = json.loads((sweep_dir / "sweep.json").read_text())
    assert manifest["status"] == "complete" and [c["label"] for c in manifest["cells"]] == CELLS
    assert manifest["flags"]["answer_cache"] is True and len(manifest["sha256"]) == 64
    for cell in manifest["cells"]:  # each cell is a normal, complete run directory
        run = sweep_dir / cell["run_dir"]
        assert read_manifest(run).status == "complete" and read_manifest(run).settings.label == cell["label"]
        assert len(read_rows(run)) == 21
    board, selection = read_leaderboard(sweep_dir / "leaderboard.json")
    assert selection is None and board.primary == "passed" and board.baseline == CELLS[0]
    assert sorted(e.label for e in board.entries) == sorted(CELLS)
    others = [e for e in board.entries if not e.is_baseline]
    assert len(others) == 5
    assert all(e.ci_low is not None and e.ci_low <= e.delta <= e.ci_high for e in others)
    assert all(e.p_holm is not None and e.p_holm >= e.p_value for e in others)
    assert all(e.latency_p50_ms is not None and e.tokens_mean > 0 for e in board.entries)
    assert {"leaderboard.md", "leaderboard.svg", "leaderboard.html"} <= {p.name for p in sweep_dir.iterdir()}
    assert "p (Holm)" in printed and CELLS[0] in printed
    # every chunk text and every question went to /api/embed once across the six cells
    inputs = embed_inputs(server)
    assert len(inputs) == len(set(inputs)) and any(i.startswith("search_query: ") for i in inputs)
    assert len(server.chat_bodies()) == 6 * 21  # no two cells share a prompt here, so every chat is distinct


def test_the_same_sweep_again_makes_no_request_and_the_same_leaderboard(server, tmp_path, capsys):
    args = ["sweep", sweep_file(tmp_path), *base(server, tmp_path)]
    assert main(args) == 0
    first = only_sweep(tmp_path)
    chats, embeds = len(server.chat_bodies()), len(server.bodies("/api/embed"))
    assert main(args + ["--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "chat calls: 126 distinct, 126 cached, 0 to make" in dry and ", 0 to embed" in dry
    assert main(args[:2] + base(server, tmp_path, out="again")) == 0
    assert len(server.chat_bodies()) == chats and len(server.bodies("/api/embed")) == embeds  # 0 and 0
    second = only_sweep(tmp_path, "again")
    assert (second / "leaderboard.json").read_bytes() == (first / "leaderboard.json").read_bytes()
    # a cached cell reports the latency its replies had when they were made
    row_a = read_rows(first / CELLS[0])[0]
    row_b = read_rows(second / CELLS[0])[0]
    assert row_b.usage["total_ms"] == row_a.usage["total_ms"]


def test_dry_run_counts_before_anything_is_cached_and_asks_nothing(server, tmp_path, capsys):
    assert main(["sweep", sweep_file(tmp_path), *base(server, tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "6 cells" in out and "chat calls: 126 distinct, 0 cached, 126 to make" in out
    assert server.chat_bodies() == []
    [timed] = server.bodies("/api/embed")  # one chunk embedded to time it, nothing else
    assert len(timed["input"]) == 1 and timed["input"][0].startswith("search_document: ")
    assert server.count("/api/chat") == 0  # no model load either
    assert not (tmp_path / "sweeps").exists()


def test_repeat_3_makes_three_chat_calls_per_case_and_reuses_them(server, tmp_path):
    args = ["sweep", "--grid", "top-k=2,4", "--repeat", "3", *base(server, tmp_path)]
    assert main(args) == 0
    bodies = server.chat_bodies()
    assert len(bodies) == 2 * 21 * 3
    prompts = [b["messages"][-1]["content"] for b in bodies]
    assert all(prompts.count(p) == 3 for p in prompts)  # the same prompt three times: three repeat indices
    rows = read_rows(only_sweep(tmp_path) / "top-k=2")
    assert len(rows) == 63 and [r.repeat for r in rows[:3]] == [0, 1, 2]
    questions = [i for i in embed_inputs(server) if i.startswith("search_query: ")]
    assert len(questions) == len(set(questions)) == 21  # repeats and cells share each question's vector
    assert main(args[:-1] + [str(tmp_path / "again")]) == 0
    assert len(server.chat_bodies()) == 2 * 21 * 3


def test_no_answer_cache_asks_again(server, tmp_path):
    args = ["sweep", "--grid", "top-k=2,4", *base(server, tmp_path)]
    assert main(args) == 0
    assert main(args[:-1] + [str(tmp_path / "again"), "--no-answer-cache"]) == 0
    assert len(server.chat_bodies()) == 2 * 2 * 21


def test_run_uses_the_answer_cache_only_when_asked(server, tmp_path):
    args = ["run", "--host", server.url, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
            "--out", str(tmp_path / "r")]
    assert main(args) == 0 and main(args) == 0
    assert len(server.chat_bodies()) == 42  # without --answer-cache every run asks
    assert main(args + ["--answer-cache"]) == 0
    assert main(args + ["--answer-cache"]) == 0
    assert len(server.chat_bodies()) == 63  # the first cached run stored its replies, the second reused them


def test_select_on_and_confirm_on_report_both(server, tmp_path):
    cases = tmp_path / "tagged.jsonl"
    lines = Path(sample_cases(tmp_path)).read_text().splitlines()
    tagged = []
    for i, line in enumerate(lines):
        case = json.loads(line)
        case["tags"] = ["dev" if i % 2 == 0 else "heldout"]
        tagged.append(json.dumps(case))
    cases.write_text("\n".join(tagged) + "\n")
    # rr reads every retrieved passage, so a larger top-k can only raise it: a cell beats the baseline top-k=1
    text = "top-k = [1, 2, 4]\nk = [1]\nprimary = \"rr\"\nselect-on = \"dev\"\nconfirm-on = \"heldout\"\n"
    assert main(["sweep", sweep_file(tmp_path, text), "--host", server.url, "--docs", str(HANDBOOK), "--cases",
                 str(cases), "--out", str(tmp_path / "s")]) == 0
    board, selection = read_leaderboard(only_sweep(tmp_path, "s") / "leaderboard.json")
    assert selection is not None and selection.select.tag == "dev" and selection.selected in ("top-k=2", "top-k=4")
    assert selection.select.entry(selection.selected).delta > 0
    assert selection.confirm.tag == "heldout" and 0 < selection.confirm.cases <= 10  # rr: answerable cases only
    assert "Selection" in (only_sweep(tmp_path, "s") / "leaderboard.md").read_text()


def test_resume_refuses_a_changed_sweep_file_or_changed_flags(server, tmp_path, capsys):
    path = sweep_file(tmp_path, "top-k = [2, 4]\n")
    assert main(["sweep", path, *base(server, tmp_path)]) == 0
    sweep_dir = only_sweep(tmp_path)
    manifest = json.loads((sweep_dir / "sweep.json").read_text())
    (sweep_dir / "sweep.json").write_text(json.dumps(manifest | {"status": "incomplete"}))
    Path(path).write_text("top-k = [2, 3]\n")
    assert main(["sweep", "--resume", str(sweep_dir)]) == 2
    assert "sweep definition changed" in capsys.readouterr().err
    Path(path).write_text("top-k = [2, 4]\n")
    assert main(["sweep", "--resume", str(sweep_dir), "--seed", "7"]) == 2
    assert "flag --seed: None -> 7" in capsys.readouterr().err
    chats = len(server.chat_bodies())
    assert main(["sweep", "--resume", str(sweep_dir), "--workers", "2"]) == 0  # speed is free to change
    assert "complete, kept" in capsys.readouterr().err and len(server.chat_bodies()) == chats


def test_bad_sweeps_are_refused_before_any_request(server, tmp_path, capsys):
    assert main(["sweep", sweep_file(tmp_path, "top-k = [2, 4]\nprimary = \"nope\"\n"), *base(server, tmp_path)]) == 2
    assert "primary must be one of" in capsys.readouterr().err
    assert main(["sweep", *base(server, tmp_path)]) == 2
    assert main(["sweep", "--grid", "top-k=2,4", "--top-k", "3", *base(server, tmp_path)]) == 2
    assert server.count() == 0


def test_leaderboard_html_is_self_contained_and_escaped(server, tmp_path):
    prompt = tmp_path / "<b>odd & prompt.txt"
    prompt.write_text("Answer from the passages.\n$passages\nQuestion: $question\n")
    default = Path(__file__).resolve().parents[2] / "chatbot" / "prompts" / "default.txt"
    text = f"prompt = [{json.dumps(str(default))}, {json.dumps(str(prompt))}]\n"
    assert main(["sweep", sweep_file(tmp_path, text), *base(server, tmp_path)]) == 0
    html = (only_sweep(tmp_path) / "leaderboard.html").read_text()
    assert "<b>odd" not in html and "&lt;b&gt;odd &amp; prompt.txt" in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<svg" in html and "<table>" in html


def test_an_offline_sweep_needs_no_server(tmp_path, capsys):
    args = ["sweep", "--grid", "chunk-size=800,2000", "--offline", "--docs", str(HANDBOOK), "--cases",
            sample_cases(tmp_path), "--k", "1", "2", "--out", str(tmp_path / "off")]
    assert main(args + ["--dry-run"]) == 0
    assert "chat calls: 0 distinct" in capsys.readouterr().out
    assert main(args) == 0
    sweep_dir = only_sweep(tmp_path, "off")
    assert read_manifest(sweep_dir / "chunk-size=800").settings.system == "offline"
    board, _ = read_leaderboard(sweep_dir / "leaderboard.json")
    assert board.entry("chunk-size=2000").p_holm is not None


def test_labels_that_one_cell_cannot_hold_are_refused_before_any_cell_runs(tmp_path, capsys):
    # The sample's evidence quotes fit 2000-character chunks; 150-character chunks (overlap 20) cut several.
    args = ["sweep", "--grid", "chunk-size=2000,150", "--chunk-overlap", "20", "--offline", "--docs", str(HANDBOOK),
            "--cases", sample_cases(tmp_path), "--k", "1", "2", "--out", str(tmp_path / "cut")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "nothing was run" in err and "cell chunk-size=150" in err and "cut by a chunk boundary" in err
    assert not list((tmp_path / "cut").glob("*/chunk-size=2000/rows.jsonl"))  # the first cell did not run either


def test_resume_refuses_finished_cells_made_with_other_labels(tmp_path, capsys):
    cases = Path(sample_cases(tmp_path))
    args = ["sweep", "--grid", "chunk-size=800,2000", "--offline", "--docs", str(HANDBOOK), "--cases", str(cases),
            "--k", "1", "2", "--out", str(tmp_path / "off")]
    assert main(args) == 0
    sweep_dir = only_sweep(tmp_path, "off")
    manifest = json.loads((sweep_dir / "sweep.json").read_text())
    (sweep_dir / "sweep.json").write_text(json.dumps(manifest | {"status": "incomplete"}))
    cases.write_text(cases.read_text().replace('"facts": ["25"]', '"facts": ["26"]', 1))  # a relabelled fact
    capsys.readouterr()
    assert main(["sweep", "--resume", str(sweep_dir)]) == 2
    assert "this finished cell was made with another setup" in capsys.readouterr().err


def test_an_errored_case_counts_zero_on_the_primary_metric_in_the_leaderboard():
    from harness.sweep.run import cell_results
    from tests.support.rowkit import make_row
    rows = [make_row("a", {"passed": 1.0}), make_row("b", {"passed": None}, error="context too long")]
    assert dict(cell_results("cell", rows, "passed").values) == {"a": 1.0, "b": 0.0}
    assert cell_results("cell", rows, "passed").errored == frozenset({"b"})
