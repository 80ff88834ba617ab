"""The sweep file and --grid: cells, labels, baseline, options, the definition hash, and the errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.sweep.plan import load_sweep, parse_grid
from pdfrag.errors import InputError


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_cells_are_the_product_in_file_order_with_readable_labels(tmp_path):
    path = write(tmp_path, 'docs = "pdfs"\ncases = "c.jsonl"\nchunk-size = [600, 1000, 2000]\ntop-k = [2, 4]\n'
                           'k = [1, 2]\n')
    plan = load_sweep(path)
    assert [c.label for c in plan.cells] == [
        "chunk-size=600,top-k=2", "chunk-size=600,top-k=4", "chunk-size=1000,top-k=2",
        "chunk-size=1000,top-k=4", "chunk-size=2000,top-k=2", "chunk-size=2000,top-k=4"]
    cell = plan.cell("chunk-size=1000,top-k=2")
    assert (cell.settings.chunk_size, cell.settings.top_k, cell.settings.k) == (1000, 2, (1, 2))
    assert cell.values == (("chunk_size", 1000), ("top_k", 2))
    assert cell.settings.docs == str(tmp_path / "pdfs")  # relative to the sweep file, as with --config
    assert plan.axes == (("chunk_size", (600, 1000, 2000)), ("top_k", (2, 4)))
    assert (plan.baseline, plan.primary, plan.alpha, plan.select_on, plan.confirm_on) == (
        "chunk-size=600,top-k=2", "passed", 0.05, None, None)
    assert plan.source == str(path)


def test_sweep_options_and_baseline_by_label_or_table(tmp_path):
    body = ('k = 1\ntop-k = [2, 4]\nprompt = ["a.txt", "b.txt"]\nprimary = "facts"\nalpha = 0.01\n'
            'select_on = "dev"\nconfirm-on = "heldout"\n')  # dashes or underscores, as in --config files
    by_label = load_sweep(write(tmp_path, body + 'baseline = "top-k=4,prompt=b.txt"\n'))
    by_table = load_sweep(write(tmp_path, body + 'baseline = {prompt = "b.txt", top-k = 4}\n', "t.toml"))
    assert by_label.baseline == by_table.baseline == "top-k=4,prompt=b.txt"
    assert (by_label.primary, by_label.alpha, by_label.select_on, by_label.confirm_on) == (
        "facts", 0.01, "dev", "heldout")
    # the label shows the path as written, the settings hold it resolved against the file's folder
    assert by_label.cell("top-k=4,prompt=b.txt").settings.prompt == str(tmp_path / "b.txt")


def test_slugs_are_safe_folder_names_and_unique(tmp_path):
    plan = load_sweep(write(tmp_path, 'k = 1\nprompt = ["p/a b.txt", "p/a_b.txt", "../x.txt"]\n'
                                      'chat-model = ["qwen3:4b", "' + "m" * 120 + '"]\n'))
    slugs = [c.slug for c in plan.cells]
    assert slugs[0] == "prompt=p_a_b.txt,chat-model=qwen3_4b"
    assert len(set(slugs)) == len(slugs) == 6  # "p/a b.txt" and "p/a_b.txt" clash once made safe
    assert all(re.fullmatch(r"[A-Za-z0-9._=,+-]{1,100}", s) and not s.startswith(".") for s in slugs)
    assert plan.cells[0].label == "prompt=p/a b.txt,chat-model=qwen3:4b"


def test_list_valued_setting_sweeps_over_a_list_of_lists(tmp_path):
    plan = load_sweep(write(tmp_path, "top-k = 4\nk = [[1, 2], [1, 4]]\n"))
    assert [c.label for c in plan.cells] == ["k=1+2", "k=1+4"]
    assert [c.settings.k for c in plan.cells] == [(1, 2), (1, 4)]


def test_grid_adds_an_axis_and_replaces_the_files_values(tmp_path):
    path = write(tmp_path, "k = 1\ntop-k = [2, 4]\nchunk-size = 800\n")
    plan = load_sweep(path, grid=["top-k=1,3", "temperature=0,0.7"])
    assert [c.label for c in plan.cells] == ["top-k=1,temperature=0", "top-k=1,temperature=0.7",
                                             "top-k=3,temperature=0", "top-k=3,temperature=0.7"]
    assert plan.cells[1].settings.temperature == 0.7 and plan.cells[1].settings.chunk_size == 800
    assert load_sweep(None, grid=["top-k=4,8"]).source is None
    assert parse_grid("think=on,off") == ("think", ["on", "off"])
    assert parse_grid("system=chatbot,offline") == ("system", ["chatbot", "offline"])


def test_flags_form_the_base_but_cannot_name_a_swept_setting(tmp_path):
    path = write(tmp_path, "top-k = [4, 8]\nchunk-size = 800\n")
    plan = load_sweep(path, flags={"chunk_size": 500, "docs": "elsewhere", "cases": "c.jsonl", "seed": None})
    assert {c.settings.chunk_size for c in plan.cells} == {500}
    assert plan.cells[0].settings.docs == "elsewhere"
    with pytest.raises(InputError, match="--docs elsewhere without --cases"):  # the bundled cases would find nothing
        load_sweep(path, flags={"docs": "elsewhere"})
    with pytest.raises(InputError, match=r"--top-k is swept in .*sweep.toml"):
        load_sweep(path, flags={"top_k": 8})


def test_definition_hash_ignores_comments_but_not_values_or_grid(tmp_path):
    first = load_sweep(write(tmp_path, "top-k = [4, 8]\n", "a.toml")).sha256
    commented = load_sweep(write(tmp_path, "# the same sweep\ntop-k = [4, 8]   # k\n", "b.toml")).sha256
    changed = load_sweep(write(tmp_path, "top-k = [4, 6]\n", "c.toml")).sha256
    gridded = load_sweep(write(tmp_path, "top-k = [4, 8]\n", "d.toml"), grid=["seed=1,2"]).sha256
    assert first == commented
    assert len({first, changed, gridded}) == 3


@pytest.mark.parametrize("body, message", [
    ("top-k = [4, 8]\nchunk_sise = 3\n", r"sweep.toml: unknown key 'chunk_sise'; sweep keys: baseline"),
    ("top-k = [2, \"four\"]\n", r"sweep.toml: setting 'top-k' must be an integer, got 'four'"),
    ("top-k = []\n", r"sweep.toml: top-k is an empty list"),
    ("top-k = [2, 2]\n", r"sweep.toml: top-k lists 2 twice"),
    ("top-k = [4, 8]\nbaseline = \"top-k=3\"\n",
     r"baseline 'top-k=3' is not one of the cells; name one of: top-k=4, top-k=8"),
    ("top-k = [4, 8]\nbaseline = {chunk-size = 3}\n", r"a baseline table must give every swept setting"),
    ("top-k = [4, 8]\nprimary = \"accuracy\"\n", r"primary must be one of .*passed"),
    ("top-k = [4, 8]\nalpha = 1.5\n", r"alpha must be a number between 0 and 1"),
    ("top-k = [4, 8]\nselect-on = \"dev\"\n", r"select-on and confirm-on go together"),
    ("top-k = [4, 8]\nselect-on = \"dev\"\nconfirm-on = \"dev\"\n", r"two different tags"),
    ("top-k = 4\n", r"nothing to sweep"),
    ("top-k = [1, 4]\nk = [1, 2, 4]\n", r"sweep.toml: cell top-k=1: --k 4 is larger than --top-k 1"),
    ("top-k = [2\n", r"sweep.toml: not valid TOML"),
    ("top-k = [4, 8]\nout = [\"a\", \"b\"]\n", r"sweep.toml: out says where the sweep goes"),
])
def test_bad_sweep_files_name_the_file_and_key(tmp_path, body, message):
    with pytest.raises(InputError, match=message):
        load_sweep(write(tmp_path, body))


def test_every_problem_is_reported_at_once(tmp_path):
    with pytest.raises(InputError) as info:
        load_sweep(write(tmp_path, "top-k = [2, \"x\"]\nchunk-size = []\nbogus = 1\n"))
    assert len(str(info.value).splitlines()) == 3


@pytest.mark.parametrize("text, message", [
    ("top-k", r"write key=value1,value2"),
    ("top_kk=1,2", r"unknown setting 'top_kk'"),
    ("k=1,2", r"sweep it in a sweep file as k = \[\[1, 2\], \[1, 4\]\]"),
    ("temperature=nan,0", r"--grid: setting 'temperature' must be a number, got 'nan'"),
    ("top-k=2,,4", r"--grid: setting 'top-k' must be an integer, got ''"),
    ("cache-dir=a,b", r"cache-dir says where the sweep goes"),
])
def test_bad_grid_arguments(text, message):
    with pytest.raises(InputError, match=message):
        parse_grid(text)


def test_missing_sweep_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"nope.toml: cannot read the sweep file"):
        load_sweep(tmp_path / "nope.toml")
