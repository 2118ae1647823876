"""``tinyagent retrieval train-classifier`` and ``export-embedder``: build ToolRAG's learned parts (extra
``tinyagent[retrieval-train]``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from .._progress import RichProgress
from ._app import app, state

__all__ = ["retrieval_app"]

retrieval_app = typer.Typer(help="Tool retrieval: export the MiniLM embedder, train a tool classifier.",
                  no_args_is_help=True)
app.add_typer(retrieval_app, name="retrieval")


@retrieval_app.command("export-embedder")
def export_embedder_cmd(
    ctx: typer.Context,
    out: Annotated[Path | None, typer.Option(help="Output folder (default: the tinyagent cache).")] = None,
    opset: Annotated[int, typer.Option(help="The ONNX opset.")] = 17,
    force: Annotated[bool, typer.Option(help="Export again even if the folder already has a model.")] = False,
) -> None:
    """Export all-MiniLM-L6-v2 to ONNX (+ an int8 copy), once, so retrieval runs on onnxruntime without torch."""
    from ...retrieval import default_embedder_dir
    from ...retrieval.export_embedder import export_embedder

    st = state(ctx)
    target = out if out is not None else default_embedder_dir()
    if (target / "meta.json").is_file() and not force:
        st.err.print(Text(f"{target} already holds an exported embedder (use --force to export again)"))
        return
    st.err.print(Text(f"wrote {export_embedder(out, opset=opset)}"))


@retrieval_app.command("train-classifier")
def train_classifier_cmd(
    ctx: typer.Context,
    data: Annotated[list[Path], typer.Option(help="JSONL training file(s) (repeat the option for more).")],
    out: Annotated[Path, typer.Option(help="Folder for classifier.onnx and classifier.json.")],
    split: Annotated[str, typer.Option(help="Comma-separated splits to train on (rows with a 'split').")] = "train",
    epochs: Annotated[int, typer.Option(help="Passes over the data.")] = 40,
    folds: Annotated[int, typer.Option(help="Folds for the out-of-fold threshold calibration.")] = 5,
    hidden: Annotated[int, typer.Option(help="Hidden units.")] = 256,
    target_recall: Annotated[float, typer.Option(help="Held-out recall the offer threshold must reach.")] = 0.99,
    hash_dim: Annotated[int | None, typer.Option(help="Width of the hashed word features (0 for none).")] = None,
    no_embedding: Annotated[bool, typer.Option(help="Hashed word features only (no MiniLM).")] = False,
    embedder: Annotated[Path | None, typer.Option(help="Exported MiniLM folder (default: the cache).")] = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Train the multi-label tool classifier on JSONL requests for the --tools set (MODULE:ATTR or a JSON file)."""
    from ...retrieval import OnnxEmbedder
    from ...retrieval.train_classifier import TrainConfig, load_rows, load_tools, train_classifier

    st = state(ctx)
    defaults = TrainConfig()
    cfg = TrainConfig(hidden=hidden, epochs=epochs, folds=folds, target_recall=target_recall,
                      hash_dim=defaults.hash_dim if hash_dim is None else hash_dim, use_embedding=not no_embedding,
                      seed=seed, threads=st.threads or defaults.threads)
    start = time.perf_counter()
    registry = load_tools(st.tools_spec or "tinyagent.functions:builtin_tools")
    rows = load_rows(data, [s for s in split.split(",") if s])
    onnx = OnnxEmbedder(embedder) if cfg.use_embedding else None
    bar = RichProgress(st.err)
    with bar.live():
        model = train_classifier(registry, rows, out, cfg, onnx, bar.stage)
    t = model.thresholds
    seconds = time.perf_counter() - start
    st.err.print(Text(f"trained on {len(rows)} rows for {len(model.tools)} tools in {seconds:.1f} s;"
                      f" thresholds offer={t.offer:.4f} wide={t.wide:.4f} top_k={t.top_k} "
                      f"zero_shot_k={t.zero_shot_k} example_k={t.example_k}"))
    st.emit_json({"metrics": model.metrics, "out": str(out)})
