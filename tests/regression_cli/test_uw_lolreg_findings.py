"""User-world findings on ``wideml fit lolreg`` (notes uw_eval, 1 and 7)."""

from __future__ import annotations

import numpy as np
import pytest

from wideml import write_store
from wideml.cli.main import main


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uw-lolreg")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 40))
    y = X[:, :3].sum(axis=1) + 0.1 * rng.standard_normal(30)
    unl = write_store(folder / "unl.zarr", X, None, feature_chunk=16)
    return folder, str(unl), y


def _run(capsys, *args):
    try:
        code = main([str(a) for a in args] + ["--no-progress"])
    except SystemExit as exc:  # argparse's refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _sentence(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if not line.startswith("wideml: scheduler")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("header", ["id", "sample_id"])
def test_id_column_on_a_store_without_ids_is_refused(capsys, reg, header):
    folder, unl, y = reg
    order = np.random.default_rng(0).permutation(len(y))
    target = folder / f"shuffled_{header}.csv"
    target.write_text(f"{header},target\n" + "".join(f"s{i:03d},{float(y[i])!r}\n" for i in order))
    out = folder / f"m_{header}.model"
    code, _, err = _run(capsys, "fit", "lolreg", unl, "--target", target, "-o", out)
    assert code == 2 and "no sample ids" in _sentence(err)
    assert not out.exists()


def test_one_column_target_in_store_order_still_works(capsys, reg):
    folder, unl, y = reg
    target = folder / "one.csv"
    target.write_text("target\n" + "".join(f"{float(v)!r}\n" for v in y))
    code, _, err = _run(capsys, "fit", "lolreg", unl, "--target", target, "-o", folder / "one.model")
    assert code == 0, err


@pytest.mark.parametrize("kind", ["csv", "npy"])
def test_missing_target_advice_works_for_fit(capsys, reg, kind):
    folder, unl, y = reg
    values = y.copy()
    values[5] = np.nan
    if kind == "csv":
        target = folder / "nan.csv"
        target.write_text("target\n" + "".join(("NA" if i == 5 else repr(float(v))) + "\n" for i, v in enumerate(values)))
    else:
        target = folder / "nan.npy"
        np.save(target, values)
    out = folder / f"nan_{kind}.model"
    code, _, err = _run(capsys, "fit", "lolreg", unl, "--target", target, "-o", out)
    sentence = _sentence(err)
    assert code == 2 and "data row 6" in sentence and "ingesting the store again" in sentence
    assert "--drop-unlabelled (drop_unlabelled" not in sentence and not out.exists()
    code, _, err = _run(capsys, "fit", "--help")
    assert "--drop-unlabelled" not in err  # the advice does not name a fit option
