"""What the apps share: turning ``--model`` and ``--tools`` into objects, building the agent, JSON-ing results.

No rich and no typer here, so the server and the voice loop can use it without the CLI extra.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import importlib.util
import json
import logging
import os
import pathlib
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .. import ConfirmHook, Tool, ToolRegistry
from ..errors import ConfigurationError, TinyAgentError
from ..models import Model, ModelRequest
from ._files import read_text

__all__ = [
    "DEFAULT_MODEL",
    "ScriptRule",
    "build_agent",
    "default_data_dir",
    "default_model_name",
    "jsonable",
    "keep_models_loaded",
    "load_model_spec",
    "load_tools",
    "parse_today",
    "result_to_dict",
    "scripted_model_from_file",
    "tools_from_file",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
SCRIPTED_PREFIX = "scripted:"
OPENAI_PREFIX = "openai:"
# The resident worker's loaded model, by (spec, threads); None outside a worker (every call loads).
_KEPT: dict[tuple[str, int | None], Model] | None = None


# -- JSON ---------------------------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A JSON value for ``value``: dataclasses, pydantic models, dates, paths and sets become plain data."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return jsonable(to_dict())
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    to_json = getattr(value, "to_json", None)
    if callable(to_json) and not isinstance(value, type):
        return jsonable(to_json())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value) if not f.name.startswith("_")]
        return {name: jsonable(getattr(value, name)) for name in fields}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(mode="json"))
    return str(value)


def _read_json_file(path: pathlib.Path, what: str) -> Any:
    """The JSON document in ``path``; ``what`` names the file in the error (e.g. ``"tools file"``).

    Raises:
        ConfigurationError: the file cannot be read or is not JSON.
    """
    try:
        return json.loads(read_text(path))
    except ValueError as exc:
        raise ConfigurationError(f"the {what} {path} is not JSON: {exc}") from exc


def _plan_to_dict(plan: Any) -> dict[str, Any]:
    calls = plan.to_json() if hasattr(plan, "to_json") else jsonable(plan)
    out: dict[str, Any] = {"calls": calls}
    answer = getattr(plan, "answer", None)
    if answer is not None:
        out["answer"] = answer
    return out


def result_to_dict(result: Any) -> dict[str, Any]:
    """A run result as JSON (``RunResult.to_dict()``: answer, plans with ``"$k"`` references, steps, usage …)."""
    to_dict = getattr(result, "to_dict", None)
    if callable(to_dict):
        data = jsonable(to_dict())
        if isinstance(data, dict):
            return data
    plans = getattr(result, "plans", None) or []
    steps = getattr(result, "steps", None) or []
    return {
        "answer": getattr(result, "answer", None),
        "plans": [_plan_to_dict(p)["calls"] for p in plans],
        "steps": [_step_to_dict(s) for s in steps],
        "usage": _usage_to_dict(getattr(result, "usage", None)),
        "timings": jsonable(getattr(result, "timings", None) or {}),
    }


def _step_to_dict(step: Any) -> dict[str, Any]:
    if isinstance(step, Mapping):
        return {str(k): jsonable(v) for k, v in step.items()}
    keys = ("id", "name", "args", "result", "error", "elapsed_s", "status")
    out = {k: jsonable(getattr(step, k, None)) for k in keys}
    if hasattr(step, "args"):
        out["args"] = _refs_to_strings(step.args)
    return out


def _refs_to_strings(args: Any) -> Any:
    from .. import Call

    try:
        return Call(id=0, name="x", args=dict(args)).to_json()["args"]
    except (TypeError, ValueError):
        return jsonable(args)


def _usage_to_dict(usage: Any) -> dict[str, int]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    return {
        "input_tokens": int(getattr(usage, "input_tokens", 0)),
        "output_tokens": int(getattr(usage, "output_tokens", 0)),
        "requests": int(getattr(usage, "requests", 0)),
    }


def parse_today(value: str | None) -> dt.date | None:
    """Parse ``YYYY-MM-DD``.

    Raises:
        ConfigurationError: not a date.
    """
    if value is None or value == "":
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise ConfigurationError(f"--today must be a date like 2026-12-01, got {value!r}") from exc


# -- models ---------------------------------------------------------------------------------------------------------


def default_model_name() -> str:
    """The catalog's default model name, or ``qwen2.5-coder-1.5b`` while no catalog is installed."""
    try:
        from ..models import ModelCatalog

        name = getattr(ModelCatalog, "default_name", None)
        if isinstance(name, str) and name:
            return name
    except (ImportError, AttributeError):
        pass
    return DEFAULT_MODEL


@dataclasses.dataclass(frozen=True)
class ScriptRule:
    """One rule of a scripted-model file: the first rule whose conditions all hold gives the reply.

    Attributes:
        reply: the model's reply.
        contains: substrings (case-insensitive) that must all occur in the user's request (the prompt's
            ``Request:`` line, so earlier turns do not match).
        context: substrings that must all occur somewhere in the request (any message).
        stage: ``"plan"`` or ``"join"`` (the joiner is recognised by its ``Answer:`` grammar or prompt), or None.
    """

    reply: str
    contains: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    stage: str | None = None


def request_stage(request: ModelRequest) -> str:
    """``"join"`` for a joiner request (its grammar or prompt asks for ``Answer:``), else ``"plan"``."""
    if request.grammar and '"Answer: "' in request.grammar:
        return "join"
    if request.grammar:
        return "plan"
    system = " ".join(str(m.get("content", "")) for m in request.messages if m.get("role") == "system")
    if "Answer:" in system and "<END_OF_PLAN>" not in system:
        return "join"
    last = str(request.messages[-1].get("content", "")) if request.messages else ""
    return "join" if request.messages and request.messages[-1].get("role") == "user" and "`Answer:" in last else "plan"


def _request_text(request: ModelRequest) -> str:
    """The user's request in a planner or joiner prompt (the ``Request:`` line), else the last user message."""
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = str(message.get("content", ""))
            found = re.findall(r"^Request: (.*)$", content, flags=re.MULTILINE)
            return found[-1] if found else content
    return ""


def scripted_model_from_file(path: str | os.PathLike[str]) -> Model:
    """A :class:`~tinyagent.models.ScriptedModel` from a JSON script (a testing and demo hook, ``--model scripted:F``).

    The file is either a list of replies (given in order, the last repeats) or an object::

        {"rules": [{"contains": ["email", "sid"], "stage": "plan", "reply": "1. ...\\n2. join()\\n<END_OF_PLAN>"},
                   {"stage": "join", "reply": "Answer: done"}],
         "default": "1. join()\\n<END_OF_PLAN>"}

    Raises:
        ConfigurationError: the file is missing or malformed.
    """
    from ..models import ScriptedModel

    file = pathlib.Path(path)
    data = _read_json_file(file, "scripted-model file")
    delay = 0.0
    if isinstance(data, list) and data and all(isinstance(r, str) for r in data):
        return ScriptedModel(data, name=f"scripted:{file.name}")
    if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
        raise ConfigurationError(
            f"{file}: a scripted-model file is a list of replies or an object with 'rules' and 'default'"
        )
    try:
        rules = [
            ScriptRule(
                reply=str(r["reply"]),
                contains=tuple(str(s).lower() for s in r.get("contains", ())),
                context=tuple(str(s).lower() for s in r.get("context", ())),
                stage=r.get("stage"),
            )
            for r in data.get("rules", [])
        ]
        delay = float(data.get("delay_s", 0.0))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ConfigurationError(f"{file}: every rule needs a 'reply' string ({exc})") from exc
    default = str(data.get("default", "1. join()\n<END_OF_PLAN>"))
    default_join = str(data.get("default_join", "Answer: Done."))

    def script(request: ModelRequest) -> str:
        stage = request_stage(request)
        last = _request_text(request).lower()
        everything = " ".join(str(m.get("content", "")) for m in request.messages).lower()
        for rule in rules:
            if rule.stage is not None and rule.stage != stage:
                continue
            if all(s in last for s in rule.contains) and all(s in everything for s in rule.context):
                return rule.reply
        return default_join if stage == "join" else default

    return ScriptedModel(script, name=f"scripted:{file.name}", delay_s=delay)


def keep_models_loaded() -> None:
    """From now on :func:`load_model_spec` keeps the last local model it loaded and hands it out again for the same
    spec and threads (the resident worker calls this; a scripted model is read afresh each time)."""
    global _KEPT
    if _KEPT is None:
        _KEPT = {}


def load_model_spec(spec: str, *, threads: int | None = None) -> Model:
    """Turn ``--model`` into a model.

    Args:
        spec: a catalog name (``qwen2.5-coder-1.5b``), a path to a ``.gguf`` file, ``openai:URL[#MODEL]`` (or a bare
            ``http(s)://`` URL) for an OpenAI-compatible endpoint, or ``scripted:FILE.json`` (a scripted model, for
            tests and demos).
        threads: llama.cpp threads (default: the model's own choice).

    Raises:
        ConfigurationError: the spec names nothing usable.
        MissingDependencyError: the backend's extra is not installed.
        ModelError, ModelIntegrityError: the model failed to load or verify.
    """
    spec = spec.strip()
    if not spec:
        raise ConfigurationError("--model is empty; pass a catalog name, a .gguf path or openai:URL")
    if spec.startswith(("http://", "https://")):  # a bare endpoint URL (``URL#model`` picks the model)
        spec = OPENAI_PREFIX + spec
    if spec.startswith(SCRIPTED_PREFIX):
        return scripted_model_from_file(spec[len(SCRIPTED_PREFIX) :])
    try:
        from ..models import load_model
    except ImportError as exc:  # the catalog is not part of this build
        raise ConfigurationError(f"cannot load model {spec!r}: the model catalog is unavailable ({exc})") from exc
    kwargs: dict[str, Any] = {}
    if threads is not None and not spec.startswith(OPENAI_PREFIX):
        kwargs["n_threads"] = threads
    key = (spec, threads)
    if _KEPT is not None and key in _KEPT:
        return _KEPT[key]
    if _KEPT:
        _KEPT.clear()  # one resident model: the old one goes before the new one loads
    model: Model = load_model(spec, **kwargs)
    if _KEPT is not None:
        _KEPT[key] = model
    return model


# -- tools ----------------------------------------------------------------------------------------------------------


def default_data_dir() -> pathlib.Path:
    """The user's tinyagent data folder (``TINYAGENT_DATA_DIR`` or the platform's user data dir)."""
    env = os.environ.get("TINYAGENT_DATA_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    import platformdirs

    return pathlib.Path(platformdirs.user_data_dir("tinyagent"))


def load_tools(spec: str | None, data_dir: pathlib.Path | None = None) -> ToolRegistry:
    """Turn ``--tools`` into a registry.

    Args:
        spec: None or ``"builtin"`` for the built-in tool library on ``data_dir`` (the demo set while
            ``tinyagent.functions`` is not installed); ``"demo"`` for the small in-memory demo set; a Python file
            (``my_tools.py``, see :func:`tools_from_file`); a ``.json`` file of
            OpenAI-format specs (plannable, not executable); or ``MODULE:ATTRIBUTE`` naming a registry, a list of tools
            or a factory taking no arguments.
        data_dir: the data folder of the built-in tools.

    Raises:
        ConfigurationError: the spec cannot be loaded.
    """
    if spec in (None, "", "builtin"):
        return _builtin_tools(data_dir or default_data_dir())
    assert spec is not None  # for mypy: narrowed above
    if spec == "demo":
        from ._demo_tools import demo_tools

        return demo_tools()
    if spec.endswith(".py"):
        return tools_from_file(pathlib.Path(spec))
    if spec.endswith(".json"):
        return _tools_from_json(pathlib.Path(spec))
    from .mcp import load_registry

    return load_registry(spec)


def tools_from_file(path: pathlib.Path) -> ToolRegistry:
    """The tools a Python file defines: ``TOOLS`` (or ``tools``: a registry, a list of tools/functions, or a
    factory), else every module-level :class:`~tinyagent.Tool`.

    Raises:
        ConfigurationError: the file is missing, fails to import, or defines no tools.
    """
    if not path.is_file():
        raise ConfigurationError(f"tools file {path} does not exist")
    name = f"_tinyagent_user_tools_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in the user's file is reported as a configuration error
        raise ConfigurationError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    found: Any = getattr(module, "TOOLS", None) or getattr(module, "tools", None)
    if callable(found) and not isinstance(found, Tool | ToolRegistry):
        found = found()
    if found is None:
        found = [v for v in vars(module).values() if isinstance(v, Tool)]
    registry = found if isinstance(found, ToolRegistry) else ToolRegistry(found)
    if not registry:
        raise ConfigurationError(f"{path} defines no tools: decorate functions with @tool or define TOOLS = [...]")
    return registry


def _tools_from_json(path: pathlib.Path) -> ToolRegistry:
    data = _read_json_file(path, "tools file")
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise ConfigurationError(f"{path}: expected a JSON list of OpenAI tool specs")
    return ToolRegistry.from_openai(data)


def _builtin_tools(data_dir: pathlib.Path) -> ToolRegistry:
    try:
        functions = importlib.import_module("tinyagent.functions")
    except ImportError as exc:
        logger.info("the built-in tool library is unavailable (%s); using the demo tools", exc)
        from ._demo_tools import demo_tools

        return demo_tools()
    settings = functions.FunctionsSettings(data_dir=data_dir)
    return ToolRegistry(functions.builtin_tools(settings))


# -- agent ----------------------------------------------------------------------------------------------------------


def build_agent(
    tools: ToolRegistry | Sequence[Tool],
    model: Model,
    *,
    confirm: ConfirmHook | None = None,
    **kwargs: Any,
) -> Any:
    """An :class:`tinyagent.Agent` over ``tools`` and ``model``.

    Tool retrieval, unless ``retriever`` is given:

    * a registry of at most :data:`AUTO_RETRIEVAL_TOOLS` tools, the built-in library included, offers every tool:
      a prompt prefix that ``tinyagent warm`` evaluates once and llama.cpp keeps cached between requests. With the
      default planner (Qwen2.5-Coder-1.5B) that planned more of the functions test split right than the built-in
      library's retriever (DAG 86% against 80%, docs/retrieval.md);
    * a larger registry (several MCP servers, say) gets :func:`tinyagent.functions.builtin_retriever` when it holds
      the built-in library, else :func:`tinyagent.retrieval.default_retriever`: the whole registry would not fit a
      small model's context (400 tools are ~40k tokens).

    Raises:
        ConfigurationError: the agent module is not available in this build.
    """
    try:
        from .. import Agent
    except ImportError as exc:
        raise ConfigurationError(f"tinyagent.Agent is not available in this build: {exc}") from exc
    if confirm is not None:
        kwargs["confirm"] = confirm
    if "examples" not in kwargs:
        kwargs["examples"] = _builtin_examples_for(tools)
    if "retriever" not in kwargs:
        kwargs["retriever"] = _auto_retriever(tools)
    return Agent(tools=tools, model=model, **kwargs)


AUTO_RETRIEVAL_TOOLS = 60
"""Registries larger than this get tool retrieval by default in the apps."""


def _tool_names(tools: ToolRegistry | Sequence[Tool]) -> set[str]:
    return set(tools) if isinstance(tools, ToolRegistry) else {t.name for t in tools}


def _auto_retriever(tools: ToolRegistry | Sequence[Tool]) -> Any:
    """The retriever :func:`build_agent` picks for ``tools`` (None: offer every tool, or no onnx extra)."""
    names = _tool_names(tools)
    try:
        functions = importlib.import_module("tinyagent.functions")
        builtin = set(functions.TOOL_NAMES) <= names
    except ImportError:
        functions, builtin = None, False
    if len(names) <= AUTO_RETRIEVAL_TOOLS:
        return None
    try:
        if builtin and functions is not None:
            retriever = functions.builtin_retriever()
        else:
            from ..retrieval import default_retriever

            retriever = default_retriever()
    except (ImportError, TinyAgentError) as exc:
        logger.warning("%d tools and no tool retrieval (%s); pip install 'tinyagent[onnx]' to shrink the prompt",
                       len(names), exc)
        return None
    logger.info("%d tools: offering the most relevant ones per request (tool retrieval)", len(names))
    return retriever


def _builtin_examples_for(tools: ToolRegistry | Sequence[Tool]) -> list[Any]:
    """The built-in library's worked examples when ``tools`` include built-in tools (the agent keeps only those whose
    tools are all offered), else none."""
    try:
        functions = importlib.import_module("tinyagent.functions")
    except ImportError:
        return []
    names = _tool_names(tools)
    if not names & set(functions.TOOL_NAMES):
        return []
    return list(functions.builtin_examples())
