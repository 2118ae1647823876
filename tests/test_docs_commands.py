"""Every ``tinyagent ...`` and ``python -m tinyagent...`` command in README.md and docs/*.md code blocks runs.

Long-running commands are checked with ``--help`` (exit 0), after checking that the documented subcommand exists and
that every documented option is one that command accepts; quick ones run for real. A documented command that is
removed, renamed or loses an option fails here. The README's main command runs for real on the default model in
the slow test.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_models import real_model_available

pytest.importorskip("typer", reason="the cli extra (typer) is not installed")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

from tinyagent.apps.cli import app, run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
START = re.compile(r"^(tinyagent|python -m tinyagent[\w.]*)(\s|$)")
SHELL_BLOCKS = ("", "bash", "sh", "shell", "console")

# ``python -m`` entry points that are shims over the typer app: the CLI words they stand for.
SHIMS = {
    "tinyagent.apps.cli": [],
    "tinyagent.finetune": ["finetune"],
    "tinyagent.quant": ["quant"],
    "tinyagent.models": ["models"],
    "tinyagent.apps.finetune_on_device": ["finetune", "run"],
    "tinyagent.retrieval.export_embedder": ["retrieval", "export-embedder"],
    "tinyagent.retrieval.train_classifier": ["retrieval", "train-classifier"],
}
# Commands quick enough to run for real (the rest get --help).
QUICK = {("demo", "init"), ("models", "list"), ("mcp", "tools"), ("tools", "list"), ("resident", "status")}


def _code_blocks(text: str) -> Iterator[list[str]]:
    """The lines of each shell code block (python, json and other blocks are skipped)."""
    lines: list[str] | None = None
    shell = False
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if lines is None and fence:
            lines, shell = [], fence.group(1) in SHELL_BLOCKS
        elif lines is not None and line.strip() == "```":
            if shell:
                yield lines
            lines = None
        elif lines is not None:
            lines.append(line)


def _logical_lines(lines: list[str]) -> Iterator[str]:
    buf = ""
    for line in lines:
        buf = f"{buf} {line.strip()}" if buf else line
        if buf.rstrip().endswith("\\"):
            buf = buf.rstrip()[:-1]
            continue
        yield buf
        buf = ""


def documented_commands(path: Path) -> Iterator[str]:
    """The tinyagent commands in ``path``'s shell code blocks (``$`` prompts, ``&&`` chains and pipes split)."""
    for block in _code_blocks(path.read_text(encoding="utf-8")):
        for line in _logical_lines(block):
            text = line.strip().removeprefix("$ ").split("  #")[0].strip()
            for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", text):
                if START.match(part.strip()):
                    yield part.strip()


ALL = sorted({(p.name, c) for p in DOCS for c in documented_commands(p)})


def _root() -> Any:
    return typer.main.get_command(app)


def _opts(params: list[Any]) -> dict[str, Any]:
    return {opt: p for p in params for opt in (*p.opts, *p.secondary_opts)}


def _takes_value(param: Any) -> bool:
    return not (getattr(param, "is_flag", False) or getattr(param, "count", False))


def resolve(words: list[str]) -> tuple[list[str], Any, list[str]]:
    """Walk the command tree: (the subcommand path, the leaf command, the words after it).

    Raises:
        AssertionError: a documented subcommand does not exist.
    """
    root = _root()
    global_opts = _opts(root.params)
    command, path, i = root, [], 0
    while i < len(words) and hasattr(command, "commands"):
        word = words[i]
        name = word.split("=", 1)[0]
        if name in global_opts:
            i += 1 + (_takes_value(global_opts[name]) and "=" not in word)
            continue
        assert word in command.commands, f"no command {' '.join(['tinyagent', *path, word])!r}"
        command, path, i = command.commands[word], [*path, word], i + 1
    return path, command, words[i:]


def unknown_options(command: Any, rest: list[str]) -> list[str]:
    """The documented options that ``command`` (with the global options) does not accept."""
    known = {**_opts(_root().params), **_opts(command.params), "--help": None}
    unknown, i = [], 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if name.startswith("-") and len(name) > 1:
            if name not in known:
                unknown.append(name)
            elif known[name] is not None and _takes_value(known[name]) and "=" not in word:
                i += 1
        i += 1
    return unknown


def cli_words(command: str) -> tuple[list[str], str | None]:
    """The ``tinyagent`` words a documented command stands for, and its module for other ``python -m`` ones."""
    words = shlex.split(command)
    if words[0] == "tinyagent":
        return words[1:], None
    module = words[2]
    if module in SHIMS:
        return [*SHIMS[module], *words[3:]], None
    return words[3:], module


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_cli(list(args), console=Console(file=out, width=160), err=Console(file=err, width=160))
    return code, out.getvalue(), err.getvalue()


def test_the_docs_document_the_main_commands() -> None:
    found = {c for _, c in ALL}
    assert len(found) >= 20
    assert any(c.startswith('tinyagent run "Email Sid the notes') for c in found)
    for prefix in ("tinyagent demo init", "python -m tinyagent.finetune distill", "python -m tinyagent.quant export",
                   "tinyagent doctor", "tinyagent distill", "tinyagent finetune train", "tinyagent quant quantize"):
        assert any(c.startswith(prefix) for c in found), prefix


def test_the_checker_catches_a_removed_command_or_option() -> None:
    with pytest.raises(AssertionError, match="no command 'tinyagent quant shrink'"):
        resolve(["quant", "shrink", "--bits", "4"])
    _, command, rest = resolve(["plan", "--tools", "t.json", "--input", "q.jsonl", "--outptu", "p.jsonl"])
    assert unknown_options(command, rest) == ["--outptu"]


@pytest.mark.parametrize(("doc", "command"), ALL, ids=[f"{d}:{c[:60]}" for d, c in ALL])
def test_documented_command_runs(doc: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    words, module = cli_words(command)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TINYAGENT_DATA_DIR": str(tmp_path / "data")}
    if module is not None:  # another module's own entry point: its --help must work
        subcommand = [w for w in words[:1] if not w.startswith("-")]
        proc = subprocess.run([sys.executable, "-m", module, *subcommand, "--help"], capture_output=True,
                              text=True, timeout=120, cwd=ROOT, env=env)
        assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
        return
    path, leaf, rest = resolve(words)
    assert not hasattr(leaf, "commands"), f"{command!r} names a group, not a command"
    assert unknown_options(leaf, rest) == [], f"{command!r} uses options {' '.join(path)} does not accept"
    monkeypatch.setenv("TINYAGENT_DATA_DIR", str(tmp_path / "data"))
    if tuple(path) in QUICK:
        real = [sys.executable if w == "python" else w for w in words]
        code, out, err = cli(*real)
        assert code == 0, f"{command}: {err[-2000:]}"
        return
    code, out, err = cli(*path, "--help")
    assert code == 0, f"{command}: {err[-2000:]}"


def _readme_main_command() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in _code_blocks(text):
        for line in _logical_lines(block):
            if "tinyagent demo init && tinyagent warm && tinyagent run" in line:
                return [part.strip() for part in line.split("&&") if part.strip().startswith("tinyagent")]
    raise AssertionError("the README lost its main command (tinyagent demo init && tinyagent warm && tinyagent "
                         "run ...)")


def test_the_readme_has_its_main_command() -> None:
    first, second, third = _readme_main_command()
    assert (first, second) == ("tinyagent demo init", "tinyagent warm") and third.startswith("tinyagent run ")


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"),
                    reason="llama-cpp-python or the default model's packages are not installed")
def test_the_readme_main_command_for_real(tmp_path: Path) -> None:
    """``tinyagent demo init && tinyagent warm && tinyagent run "..."`` exactly as the README writes it, on the
    default model."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TINYAGENT_DATA_DIR": str(tmp_path / "data")}
    for command in _readme_main_command():
        words = shlex.split(command)
        proc = subprocess.run([sys.executable, "-m", "tinyagent.apps.cli", *words[1:]], capture_output=True,
                              text=True, timeout=900, cwd=ROOT, env=env)
        assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
    assert "╭─ Answer " in proc.stdout
    assert re.search(r"\d+ step\(s\) · \d+ plan\(s\) · \d+ tokens", proc.stdout)


@pytest.mark.parametrize("module", sorted(SHIMS))
def test_python_m_shims_run_the_typer_commands(module: str) -> None:
    """Each ``python -m tinyagent...`` entry point is the same typer command (its usage line says which)."""
    proc = subprocess.run([sys.executable, "-W", "error", "-m", module, "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"Usage: {' '.join(['tinyagent', *SHIMS[module]])} [OPTIONS]" in proc.stdout


BENCH = re.compile(r"`(?:flock \S+ )?(?:nice -n \d+ )?python (benchmarks/\w+\.py)([^`]*)`")


def _benchmark_commands() -> dict[str, set[str]]:
    """Each ``python benchmarks/X.py ...`` command the docs show in backticks: the script and its options."""
    uses: dict[str, set[str]] = {}
    for doc in DOCS:
        for match in BENCH.finditer(doc.read_text(encoding="utf-8").replace("\n", " ")):
            uses.setdefault(match.group(1), set()).update(re.findall(r"(?<!\S)(--[\w-]+)", match.group(2)))
    return uses


def test_every_documented_benchmark_command_exists_with_its_options() -> None:
    """The benchmarks take minutes to hours, so each documented one is checked with ``--help``: the script exists,
    starts, and accepts every option the docs give it (the figures come from running them, see the results files)."""
    uses = _benchmark_commands()
    assert "benchmarks/bench_pa_proxy.py" in uses and "--cases" in uses["benchmarks/bench_pa_proxy.py"]
    for script, options in sorted(uses.items()):
        assert (ROOT / script).exists(), script
        shown = subprocess.run([sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True,
                               timeout=300, cwd=ROOT)
        assert shown.returncode == 0, (script, shown.stderr[-500:])
        assert not [o for o in options if o not in shown.stdout], (script, options)


SHELL_BENCH = re.compile(r"`(?:OUT=\S+ )?bash (benchmarks/[\w.-]+\.sh)[^`]*`")


def test_every_documented_benchmark_script_exists_and_parses() -> None:
    """Shell benchmarks meant for other machines (``bash benchmarks/gpu_qlora_check.sh`` needs a GPU) cannot run here:
    each one the docs show must exist and be valid bash, and must run the tests it claims to."""
    scripts = {m.group(1) for doc in DOCS for m in SHELL_BENCH.finditer(doc.read_text(encoding="utf-8"))}
    assert "benchmarks/gpu_qlora_check.sh" in scripts
    for script in sorted(scripts):
        assert (ROOT / script).exists(), script
        checked = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, (script, checked.stderr)
    assert "tests/test_finetune_qlora.py" in (ROOT / "benchmarks/gpu_qlora_check.sh").read_text(encoding="utf-8")
