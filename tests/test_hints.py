"""Hints that go the whole way (issue #30, 6): a mistyped command gets its did-you-mean, a resume whose server is
gone says the server may change, and a label that names runs of different systems is said to."""

from __future__ import annotations

import pytest

from chatbot.cli import main as chat_main
from harness.cli import main
from harness.errors import RunStopped
from harness.evaluate import run_evaluation
from harness.runs import find_run, read_manifest, read_rows
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, SAMPLE_DOCS
from tests.fake_ollama import FakeOllama

PLUGIN = "examples.bm25_pages:make_system"


@pytest.mark.parametrize("argv, hint", [
    (["comapre", "a", "b"], "did you mean compare?"),
    (["reveiw", "RUN"], "did you mean review?"),
    (["draft", "reveiw", "d.jsonl"], "did you mean review?"),
    (["run", "--backend", "olama"], "did you mean ollama?"),
])
def test_a_mistyped_command_or_choice_gets_its_closest_name(argv, hint, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2 and hint in capsys.readouterr().err


def test_a_word_close_to_nothing_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main(["zzz"])
    err = capsys.readouterr().err
    assert "invalid choice: 'zzz'" in err and "did you mean" not in err


@pytest.mark.parametrize("argv, hint", [(["aks", "q"], "did you mean ask?"),
                                        (["ask", "q", "--backend", "opnai"], "did you mean openai?")])
def test_rag_chat_suggests_too(argv, hint, capsys):
    with pytest.raises(SystemExit):
        chat_main(argv)
    assert hint in capsys.readouterr().err


def _settings(tmp_path, host: str) -> RunSettings:
    return RunSettings(docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"), out=str(tmp_path / "out"),
                       host=host, retries=0, backoff=0.01)


def test_a_resume_against_a_dead_host_names_host_and_the_new_host_finishes_it(tmp_path, capsys):
    def ctrl_c_after_three(stage, done, total):
        if stage == "cases" and done == 3:
            raise KeyboardInterrupt

    with FakeOllama() as gone:
        with pytest.raises(RunStopped) as stopped:
            run_evaluation(_settings(tmp_path, gone.url), progress=ctrl_c_after_three)
    run_dir = stopped.value.run_dir
    assert main(["run", "--resume", str(run_dir)]) == 1  # its server is gone
    err = capsys.readouterr().err
    assert f"rag-eval run --resume {run_dir} --host URL" in err and "the server may change" in err
    assert "--offline" in err
    with FakeOllama() as other:  # the hint holds: another server finishes the run
        assert main(["run", "--resume", str(run_dir), "--host", other.url]) == 0
    assert read_manifest(run_dir).status == "complete" and len(read_rows(run_dir)) == 21


def test_a_server_gone_mid_run_says_the_host_may_change(tmp_path):
    with FakeOllama() as server:
        server.chat_rule = lambda body: server.drop_next(count=1000) or "{}"
        with pytest.raises(RunStopped, match=r"--host may name another server"):
            run_evaluation(_settings(tmp_path, server.url))


def test_compare_warns_when_a_label_names_runs_of_different_systems(tmp_path, capsys):
    out = tmp_path / "out"
    common = dict(docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"), out=str(out))
    base = run_evaluation(RunSettings(system="offline", label="base", **common)).run_dir
    first = run_evaluation(RunSettings(system=PLUGIN, label="mine", **common)).run_dir
    latest = run_evaluation(RunSettings(system="offline", label="mine", **common)).run_dir
    picked, note = find_run("mine", out)
    assert picked == latest and "2 different systems" in note
    assert f"{PLUGIN} (bm25-pages example): {first}" in note and f"offline: {latest}" in note
    assert main(["compare", "base", "mine", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: label 'mine' names runs of 2 different systems" in err and str(first) in err
    assert "different systems" not in find_run("base", out)[1]
    assert find_run(str(base), out) == (base, None)


@pytest.mark.parametrize("command", [["run", "--offline"], ["check"]])
def test_documents_of_ones_own_without_cases_are_refused_naming_both_ways_forward(command, tmp_path, capsys):
    """The bundled cases ask about sample_docs/: with other documents they would find none of their pages, so
    --docs without --cases is one line naming --cases and drafting (issue #44 item 4); the bundled folder or a
    file in it keeps the bundled cases."""
    mine = tmp_path / "my_pdfs"
    mine.mkdir()
    (mine / "a.pdf").write_bytes(HANDBOOK.read_bytes())
    assert main([*command, "--docs", str(mine)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"--docs {mine} without --cases" in line and "--cases FILE" in line
    assert f"`rag-eval draft --docs {mine}`" in line
    config = tmp_path / "mine.toml"
    config.write_text(f'docs = "{mine}"\n')
    assert main([*command, "--config", str(config)]) == 2
    assert "without --cases" in capsys.readouterr().err


def test_the_bundled_documents_keep_the_bundled_cases(tmp_path, capsys):
    assert main(["check", "--docs", str(SAMPLE_DOCS)]) == 0
    assert "cases OK" in capsys.readouterr().out


def test_top_k_alone_trims_the_default_k_and_says_so(tmp_path, capsys):
    """`--top-k 2` alone runs: the default --k 1,2,4 becomes 1,2, said on stderr; a --k given is never trimmed
    (a --k over --top-k stays refused), and a --top-k that covers the default says nothing (issue #44)."""
    out = str(tmp_path / "results")
    assert main(["run", "--offline", "--top-k", "2", "--limit", "3", "--out", out, "--label", "two"]) == 0
    err = capsys.readouterr().err
    assert "note: --k not given: Hit@k and Recall@k at 1, 2 (the default 1, 2, 4 trimmed to --top-k 2)" in err
    assert read_manifest(find_run("two", out)[0]).settings.k == (1, 2)
    assert main(["run", "--offline", "--top-k", "2", "--k", "1", "4", "--limit", "3", "--out", out]) == 2
    assert "--k 4 is larger than --top-k 2" in capsys.readouterr().err
    assert main(["run", "--offline", "--top-k", "5", "--limit", "3", "--out", out, "--label", "five"]) == 0
    assert "--k not given" not in capsys.readouterr().err
    assert read_manifest(find_run("five", out)[0]).settings.k == (1, 2, 4)


@pytest.mark.parametrize("backend, suffix", [("ollama", ""), ("openai", "/v1")])
def test_a_wrong_embed_host_is_named_as_embed_host(backend, suffix, server, tmp_path, capsys):
    """Nothing listens at the --embed-host given: the message points at --embed-host, the flag to fix, not --host
    (issue #44); the same for an embedding URL in the other API's path."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nothing = f"http://127.0.0.1:{s.getsockname()[1]}{suffix}"
    base = ["run", "--backend", backend, "--host", server.url + suffix, "--out", str(tmp_path / "r")]
    assert main([*base, "--embed-host", nothing]) == 1
    err = capsys.readouterr().err
    assert "--embed-host" in err and "point --host" not in err and "--host /" not in err
    wrong_path = server.url + ("/api" if backend == "openai" else "/v1")
    assert main([*base, "--embed-host", wrong_path]) == 2
    assert f"--embed-host {wrong_path} ends with" in capsys.readouterr().err
