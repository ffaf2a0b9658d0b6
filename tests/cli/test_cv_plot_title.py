"""`wideml cv --plot`: the title names n, p, the folds and the passes over X; the caption explains the bands."""

from __future__ import annotations

import pytest

from oracles import make_data
from wideml import write_store
from wideml.cli.main import main

pytest.importorskip("matplotlib")


def test_title_gives_n_p_folds_and_passes_and_the_caption_explains_the_bands(tmp_path, monkeypatch, capsys):
    import matplotlib.figure
    import matplotlib.text

    X, y = make_data(n=40, p=1234, K=2)
    write_store(tmp_path / "s.zarr", X, y, feature_chunk=256)
    texts: list[str] = []
    real_savefig = matplotlib.figure.Figure.savefig

    def savefig(fig, fh, **kw):  # collect every text drawn on the figure (title, caption, legend)
        texts.extend(t.get_text() for t in fig.findobj(matplotlib.text.Text))
        return real_savefig(fig, fh, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    code = main(["cv", str(tmp_path / "s.zarr"), "--methods", "lol,pca", "--max-dim", "4", "--folds", "4",
                 "--plot", str(tmp_path / "cv.png"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    drawn = "\n".join(texts)
    assert "n = 40, p = 1,234" in drawn and "4-fold CV" in drawn and "1 pass over X" in drawn
    assert "\u00b11 sd of the error over the 4 folds" in drawn
    assert (tmp_path / "cv.png").read_bytes()[:4] == b"\x89PNG"
