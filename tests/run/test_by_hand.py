"""The steps run by hand refuse what the config check refuses: one line naming the option, exit 2, nothing written.

Each case runs ``python -m gpumm STEP ...`` in a fresh folder, as a user would, and looks for any file written
there afterwards (``find -newer``, as the held-out sweep of issue 20 did). None of them needs a GPU: the options are
checked before anything is imported that would.
"""

import os
import subprocess
import sys
import time

import pytest

from gpumm.setup import paths

CASES = [
    ("measure --variant cpu_blas --sizes 0", "argument --sizes: 0 is not allowed; allowed: an integer 1 to 32768"),
    ("measure --variant cpu_blas --sizes -4", "argument --sizes: -4 is not allowed"),
    ("measure --variant cpu_blas --sizes 4k", "argument --sizes: '4k' is not allowed"),
    ("measure --variant cpu_blas --sizes 16.0", "argument --sizes: '16.0' is not allowed"),
    ("measure --variant cpu_blas --shapes 4x4", "argument --shapes: '4x4' is not allowed; allowed: MxNxK"),
    ("measure --variant cpu_blas --shapes 4x4x0", "argument --shapes: 0 is not allowed"),
    ("measure --variant cpu_blas", "nothing to measure: give --sizes or --shapes"),
    ("measure --variant cpu_blas --sizes 16 --mode-max-size zero_copy=x", "argument --mode-max-size: 'x' is not"),
    ("measure --variant cpu_blas --sizes 16 --mode-max-size pinned=4", "MODE one of zero_copy, managed"),
    ("measure --variant cpu_blas --sizes 16 --seed -1", "argument --seed: -1 is not allowed"),
    ("measure --variant cpu_blas --sizes 16 --cpu-max-mnk -1", "argument --cpu-max-mnk: -1 is not allowed"),
    ('measure --variant cpu_blas --sizes 16 --timing {"budget_s":-5}', "--timing: budget_s = -5 is not allowed"),
    ('measure --variant cpu_blas --sizes 16 --timing {"min_samples":2.0}', "--timing: min_samples = 2.0 is not"),
    # issue 29: NaN and infinity pass every minimum and maximum; they are refused as no finite number
    (
        'measure --variant cpu_blas --sizes 16 --timing {"budget_s":NaN}',
        "--timing: budget_s = NaN is not allowed: not a",
    ),
    ('measure --variant cpu_blas --sizes 16 --timing {"timeout_s":Infinity}', "timeout_s = Infinity is not allowed"),
    ('measure --variant cpu_blas --sizes 16 --settings {"timing":{"budget_s":-Infinity}}', "= -Infinity is not"),
    ('coalescing --cubin k.cubin --plan {"count":NaN}', "argument --plan: count = NaN is not allowed"),
    ("measure --variant tiled_tile8.0 --sizes 16", "tiled_tile8.0"),
    ("overhead --cubin k.cubin --repeats 0", "argument --repeats: 0 is not allowed; allowed: an integer of at least 1"),
    ("overhead --cubin k.cubin --warmups x", "argument --warmups: 'x' is not allowed"),
    ("hierarchy --cubin k.cubin --warmups -1", "argument --warmups: -1 is not allowed"),
    ("bandwidth --bytes 5", "argument --bytes: 5 is not allowed; allowed: an integer 1048576 to 17179869184"),
    ('coalescing --cubin k.cubin --plan {"sizes":[0]}', "argument --plan: sizes[0] = 0 is not allowed"),
    ('coalescing --cubin k.cubin --plan {"strides":[2.0]}', "argument --plan: strides[0] = 2.0 is not allowed"),
    ("coalescing --cubin k.cubin --plan [1]", "argument --plan: not allowed: the config's coalescing section"),
]
OTHER_STEPS = [  # steps with no --out-dir: a folder that is not what the step reads
    ("replay --variant naive --archive nowhere --part raw", "nowhere: not an archive (no raw/provenance.json)"),
    ("pack-archive nowhere", "nowhere: not an archive"),
    ("index --tables nowhere --out o/index.html", "nowhere: no tables here (no source.json)"),
    ("pages --pages ladder --tables nowhere --notebooks-out o --out o", "nowhere: no tables here"),
]


@pytest.mark.parametrize(
    "args, expected",
    [(f"{a} --out-dir out", e) for a, e in CASES] + OTHER_STEPS,
    ids=[c[0] for c in CASES + OTHER_STEPS],
)
def test_a_step_by_hand_refuses_a_bad_value_in_one_line_writing_nothing(tmp_path, args, expected):
    stamp = tmp_path / "stamp"
    stamp.write_text("")
    time.sleep(0.01)
    step, *rest = args.split(" ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMM_")}  # by hand: no worker, no run log
    env["PYTHONPATH"] = str(paths.ROOT / "src")
    r = subprocess.run(
        [sys.executable, "-m", "gpumm", step, *rest],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith(f"gpumm {step}: ") and expected in lines[0], r.stderr
    written = subprocess.run(
        ["find", str(tmp_path), "-newer", str(stamp), "-not", "-type", "d"], capture_output=True, text=True
    ).stdout.split()
    assert written == [] and not (tmp_path / "out").exists() and not (tmp_path / "o").exists()
