"""Plain llama-cpp-python tool calling, the baselines tinyagent's planner is compared against on BFCL.

Two ways to get tool calls out of a GGUF model without tinyagent:

* ``"chatml-function-calling"``: llama-cpp-python's own handler (``Llama(chat_format="chatml-function-calling")``,
  ``create_chat_completion(tools=..., tool_choice="auto")``); the calls are read from ``message.tool_calls``.
  The handler lists the tools only inside a system message, so one is always given.
* ``"gguf-template"``: the chat template stored in the GGUF (``chat_format=None``), which renders the tools itself.
  llama-cpp-python does not parse the reply into ``tool_calls``; the small Qwen models answer with a fenced
  ```` ```json {"name": ..., "arguments": ...}``` ```` block (rarely a ``<tool_call>`` tag), so a lenient parser
  reads every such JSON object from the reply.

Both run greedy (temperature 0, top-k 1, no repeat penalty) with the same ``max_tokens`` and the same normalised JSON
schemas as the SDK, so the comparison is only about how the model is driven.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from .._tools import Tool
from ..errors import ConfigurationError, MissingDependencyError, ModelError
from ..models import on_llama_thread
from .bfcl import BfclCase

__all__ = ["BASELINES", "DEFAULT_SYSTEM_PROMPT", "BaselineName", "LlamaToolBaseline", "parse_tool_calls"]

logger = logging.getLogger(__name__)

BaselineName = Literal["chatml-function-calling", "gguf-template"]
BASELINES: tuple[BaselineName, ...] = ("chatml-function-calling", "gguf-template")
"""The baselines, by the name used in the benchmark's results."""

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant that can call functions."
"""The system message both baselines get (plus the case's own system messages, if any)."""

_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
_ARG_KEYS = ("arguments", "parameters", "args")


class LlamaToolBaseline:
    """A BFCL predictor that drives a GGUF model through llama-cpp-python's own tool calling.

    Args:
        model_path: the GGUF file (for a catalog model: ``ModelCatalog().path(name)``).
        mode: ``"chatml-function-calling"`` or ``"gguf-template"``.
        max_tokens: the most tokens to generate (for the chatml handler: per inner completion, which it would
            otherwise leave unbounded).
        n_ctx: context size.
        n_threads: llama.cpp threads.
        system_prompt: the system message.
        seed: sampling seed (decoding is greedy anyway).

    Raises:
        ConfigurationError: an unknown mode or a missing file.
        MissingDependencyError: llama-cpp-python is not installed.
        ModelError: llama.cpp could not load the file.
    """

    def __init__(
        self,
        model_path: str | Path,
        mode: BaselineName,
        *,
        max_tokens: int = 512,
        n_ctx: int = 4096,
        n_threads: int = 2,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        seed: int = 0,
    ) -> None:
        if mode not in BASELINES:
            raise ConfigurationError(f"unknown baseline {mode!r}; choose from {list(BASELINES)}")
        path = Path(model_path)
        if not path.is_file():
            raise ConfigurationError(f"GGUF file {path} does not exist")
        try:
            import llama_cpp  # noqa: F401 - the extra must be installed

            from ..models import new_llama
        except ImportError as exc:
            raise MissingDependencyError("llama-cpp-python", "llama") from exc
        self.mode: BaselineName = mode
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.last_reply: str = ""
        try:
            self._llm: Any = new_llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                chat_format="chatml-function-calling" if mode == "chatml-function-calling" else None,
                seed=seed,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - llama.cpp raises ValueError/RuntimeError on bad files
            raise ModelError(f"llama.cpp could not load {path}: {exc}") from exc
        if mode == "chatml-function-calling":
            self._cap_inner_completions()

    def _cap_inner_completions(self) -> None:
        """Hold every inner completion of the chatml handler to ``max_tokens``.

        The handler passes ``max_tokens=None`` to its inner completions (the choice of function, each call's
        arguments), so a model that never closes its JSON would generate up to the context size. Capping each
        inner completion keeps the comparison at the same ``max_tokens`` as the other systems.
        """
        inner = self._llm.create_completion
        cap = self.max_tokens

        def capped(*args: Any, **kwargs: Any) -> Any:
            wanted = kwargs.get("max_tokens")
            if wanted is None or wanted <= 0 or wanted > cap:
                kwargs["max_tokens"] = cap
            return inner(*args, **kwargs)

        self._llm.create_completion = capped

    def __call__(self, case: BfclCase) -> list[dict[str, Any]]:
        """Predict the case's calls: ``[{"name", "args"}]``, an empty list when the model answers in text.

        Raises:
            ToolDefinitionError: a function of the case cannot be expressed as a JSON-schema tool.
            ModelError: llama.cpp failed.
        """
        tools = [Tool.from_openai(f).to_openai() for f in case.functions]
        system = self.system_prompt if not case.system else f"{self.system_prompt}\n\n{case.system}"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": case.question}]
        options: dict[str, Any] = dict(
            messages=messages, tools=tools, max_tokens=self.max_tokens, temperature=0.0, top_k=1,
            repeat_penalty=1.0,
        )
        if self.mode == "chatml-function-calling":
            options["tool_choice"] = "auto"
        try:
            response: Any = on_llama_thread(self._llm.create_chat_completion, **options)
        except Exception as exc:  # noqa: BLE001 - any llama.cpp failure becomes a ModelError
            raise ModelError(f"{self.mode}: llama.cpp failed on {case.id}: {type(exc).__name__}: {exc}") from exc
        message = response["choices"][0]["message"]
        content = message.get("content") or ""
        raw_calls = message.get("tool_calls") or []
        self.last_reply = content or json.dumps(raw_calls)
        names = [str(f.get("name", "")) for f in case.functions]
        calls = [_from_openai_call(c) for c in raw_calls if isinstance(c, Mapping)]
        if not calls and self.mode == "gguf-template":
            calls = parse_tool_calls(content)
        return [{"name": _match_name(c["name"], names), "args": c["args"]} for c in calls]

    def close(self) -> None:
        """Free the model's memory."""
        self._llm.close()


def _from_openai_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"name": str(function.get("name", "")), "args": _arguments(function.get("arguments"))}


def _arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a dict; a JSON string is decoded; anything unreadable becomes ``{}`` (still a call)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        values = list(_json_values(raw))
        if values and isinstance(values[0], dict):
            return dict(values[0])
    return {}


def _match_name(name: str, names: Sequence[str]) -> str:
    """Undo the renamings models make (``functions.`` prefixes, dots written as underscores)."""
    if name in names:
        return name
    bare = name.removeprefix("functions.")
    if bare in names:
        return bare
    for candidate in names:
        if candidate.replace(".", "_") == bare:
            return candidate
    return name


def parse_tool_calls(text: str) -> list[dict[str, Any]]:
    """Read the tool calls a model wrote as text: ``<tool_call>`` tags, fenced JSON blocks, or bare JSON.

    Every JSON object with a ``"name"`` and ``"arguments"`` (or ``"parameters"``/``"args"``) is a call, also inside
    a list or an OpenAI-style ``{"function": {...}}`` wrapper. Text without such an object yields no call.

    Returns:
        ``[{"name", "args"}]`` in the order written.
    """
    chunks = [m.group(1) for m in _TOOL_CALL_TAG.finditer(text)]
    if not chunks:
        chunks = [m.group(1) for m in _FENCE.finditer(text)]
    if not chunks:
        chunks = [text]
    calls: list[dict[str, Any]] = []
    for chunk in chunks:
        for value in _json_values(chunk):
            calls.extend(_calls_in(value))
    return calls


def _calls_in(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _calls_in(item)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("function"), dict) and "name" in value["function"]:
        yield from _calls_in(value["function"])
        return
    if isinstance(value.get("tool_calls"), list):
        yield from _calls_in(value["tool_calls"])
        return
    name = value.get("name")
    if isinstance(name, str) and name:
        raw_args: Any = next((value[k] for k in _ARG_KEYS if k in value), {})
        yield {"name": name, "args": _arguments(raw_args)}


def _json_values(text: str) -> Iterable[Any]:
    """Every top-level JSON object or array in ``text``, left to right (text between them is skipped)."""
    decoder = json.JSONDecoder()
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        yield value
        index = end
