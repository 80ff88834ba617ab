"""Issue #19 item 15: grids are counted before they are built, bad values are all reported at once, and settings
that only change speed are not axes."""

from __future__ import annotations

import time

import pytest

from harness.cli import main
from harness.sweep.plan import load_sweep
from tests.conftest import HANDBOOK, sample_cases


def _sweep(tmp_path, *args):
    return main(["sweep", *args, "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(tmp_path / "sweeps"), "--dry-run"])


def test_a_huge_grid_is_refused_at_once_with_its_count(tmp_path, capsys):
    seeds = ",".join(str(n) for n in range(1, 1001))
    started = time.monotonic()
    code = _sweep(tmp_path, "--grid", f"seed={seeds}", "--grid", "temperature=0,0.5,0.7,1", "--grid", "top-k=2,4,6",
                  "--grid", "num-ctx=4096,8192")
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 5.0
    assert "24000 cells (1000 seed x 4 temperature x 3 top-k x 2 num-ctx), more than --max-cells 256" in err
    assert "--max-cells 24000" in err and len(err.strip().splitlines()) == 1


def test_max_cells_raises_the_limit_and_dry_run_prints_the_count_first(tmp_path, capsys):
    grid = ["--grid", "seed=1,2,3", "--grid", "top-k=5,6"]
    assert _sweep(tmp_path, *grid, "--max-cells", "5") == 2
    assert "6 cells" in capsys.readouterr().err
    assert _sweep(tmp_path, *grid, "--max-cells", "6") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("6 cells; baseline seed=1,top-k=5")
    assert len(load_sweep(None, grid=["seed=" + ",".join(map(str, range(300)))], max_cells=None).cells) == 300


def test_every_bad_grid_value_is_reported_at_once(tmp_path, capsys):
    assert _sweep(tmp_path, "--grid", "top-k=2,abc,-1,0", "--grid", "chunk-size=x") == 2
    err = capsys.readouterr().err
    assert "'abc'" in err and "top-k must be at least 1, got -1" in err and "got 0" in err and "'x'" in err


@pytest.mark.parametrize("key", ["workers", "timeout"])
def test_speed_settings_are_not_axes(tmp_path, capsys, key):
    assert _sweep(tmp_path, "--grid", f"{key}=1,2", "--grid", "top-k=2,4") == 2
    assert f"{key} changes how fast cells run, not what they measure" in capsys.readouterr().err
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(f"{key} = [1, 2]\ntop-k = [2, 4]\n")
    assert _sweep(tmp_path, str(sweep_file)) == 2
    assert f"{key} changes how fast cells run" in capsys.readouterr().err
