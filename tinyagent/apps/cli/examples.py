"""``tinyagent examples build``: synthesize, verify and cache worked examples for a registry that has none."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ._app import app, state

__all__ = ["examples_app"]

examples_app = typer.Typer(help="Automatic worked examples for tools that come without any.", no_args_is_help=True)
app.add_typer(examples_app, name="examples")


@examples_app.command("build")
def build_cmd(
    ctx: typer.Context,
    teacher: Annotated[bool, typer.Option(help="Let --model rewrite the template requests into natural ones "
                                               "(each rewrite is verified again; slower).")] = False,
    max_paraphrases: Annotated[int, typer.Option(help="Rewrite at most this many requests.")] = 48,
    force: Annotated[bool, typer.Option(help="Build again even if the cache has this registry's examples.")] = False,
    out: Annotated[Path | None, typer.Option(help="Cache folder (default: the tinyagent cache).")] = None,
    seed: Annotated[int, typer.Option(help="Synthesis seed.")] = 0,
) -> None:
    """Build the example cache for the --tools registry; agents over the same tools then use it by themselves."""
    from ...finetune import build_examples

    st = state(ctx)
    built = build_examples(st.tools(), teacher=st.model() if teacher else None, root=out, force=force, seed=seed,
                           max_paraphrases=max_paraphrases)
    if st.json:
        st.emit_json({"path": str(built.path), "key": built.key, "examples": len(built.examples),
                      "dropped": built.dropped, "paraphrased": built.paraphrased, "seconds": built.seconds,
                      "cached": built.cached})
        return
    verb = "reused" if built.cached else f"built in {built.seconds:.1f} s"
    st.err.print(Text(f"{len(built.examples)} examples for {len(st.tools())} tools {verb}: {built.path}"))
    if built.dropped:
        st.err.print(Text("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(built.dropped.items()))))
