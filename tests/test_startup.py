"""Start-up (issue #20 item 21): `rag-eval` imports only the module of the sub-command it runs, and neither
`harness.cli` nor `rag-eval --help` imports the model client, pydantic, numpy or pypdf. Checked in a fresh
subprocess, whose `sys.modules` is what the user's process would hold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import _COMMANDS, build_parser, chosen_command, main

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("ollama", "openai", "numpy", "pydantic", "pydantic_core", "pypdf", "jsonschema", "bm25s", "httpx")


def _heavy_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running `code` (which may exit through argparse)."""
    probe = (f"import sys, json, atexit\n"
             f"atexit.register(lambda: sys.__stderr__.write(json.dumps(sorted(m for m in {list(HEAVY)!r} "
             f"if m in sys.modules)) + chr(10)))\n{code}")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_importing_harness_cli_imports_no_heavy_module():
    assert _heavy_after("import harness.cli") == []


def test_importing_the_packages_imports_no_heavy_module():
    assert _heavy_after("import chatbot, harness, pdfrag.terminal, pdfrag.errors") == []


@pytest.mark.parametrize("argv", [["--help"], ["report", "--help"], ["compare", "--help"], ["--version"]])
def test_help_runs_without_heavy_modules(argv):
    assert _heavy_after(f"from harness.cli import main; main({argv!r})") == []


def test_a_command_imports_what_it_needs(tmp_path):
    """The lazy start does not break a command: `compare` run for real loads the statistics (and numpy) it needs,
    here before it finds that the runs named do not exist."""
    missing = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert "numpy" in _heavy_after(f"from harness.cli import main; main(['compare', *{missing!r}])")


def test_only_the_chosen_command_is_built_in_full(capsys):
    assert chosen_command(["compare", "a", "b"]) == ["compare"]
    assert chosen_command(["--version"]) == [] and chosen_command(["nope"]) == []
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    listing = " ".join(capsys.readouterr().out.split())
    for name, line in _COMMANDS.items():
        assert f"{name} {' '.join(line.split())}" in listing


def test_a_typo_of_a_command_is_bad_usage(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["comapre", "a", "b"])
    assert stop.value.code == 2
    assert "invalid choice: 'comapre'" in capsys.readouterr().err


def test_the_help_lines_are_those_each_module_registers():
    """`_COMMANDS` repeats each module's one-line help so `--help` need not import it: keep them equal."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    registered = {a.dest: a.help for a in sub._choices_actions}
    assert registered == _COMMANDS


def test_lazy_package_exports():
    import chatbot
    import harness
    assert chatbot.Index.__name__ == "Index" and harness.Row.__name__ == "Row"
    from pdfrag import normalize
    assert normalize("ﬁle") == "file"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        chatbot.nope  # noqa: B018


def test_harness_hands_on_the_library_calls_its_docstring_promises():
    """`harness`'s face promises the calls behind `rag-eval run`, `score` and `compare`: each is there, and is the
    function the command calls."""
    import harness
    from harness.evaluate import run_evaluation
    from harness.report.compare import compare_runs
    from harness.saved.to_run import score_to_run
    from harness.settings import RunSettings
    assert (harness.run_evaluation, harness.score_to_run, harness.compare_runs, harness.RunSettings) == \
        (run_evaluation, score_to_run, compare_runs, RunSettings)
    promised = {"run_evaluation", "score_to_run", "compare_runs", "RunSettings"}
    assert promised <= set(harness.__all__) and all(f"`{name}`" in harness.__doc__ for name in promised)


def test_the_report_asks_a_system_its_traits_without_importing_it():
    """Issue 31: the report's header asks the run's system its traits (`harness.systems.traits`); that imports
    neither the chatbot system nor its model client."""
    assert "openai" not in _heavy_after("import harness.report.html, harness.report.report_run; "
                                        "from harness.systems import traits_for; traits_for('chatbot')")
    code = ("import sys, harness.report.html; from harness.systems import traits_for; traits_for('chatbot'); "
            "print(sorted(m for m in sys.modules if m.startswith('harness.systems.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['harness.systems.interface', 'harness.systems.traits']", done.stderr
