"""BFCL data: the pinned ``bfcl-eval`` wheel (downloaded once, read as a zip) and its single-turn cases.

Public through :mod:`tinyagent.evals.bfcl`.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import BfclDataError, ConfigurationError

__all__ = [
    "BFCL_VERSION", "CATEGORIES", "DEFAULT_CATEGORIES", "LIVE_CATEGORIES", "PARITIES", "BfclCase", "Parity",
    "case_index", "check_parity", "ensure_data", "load_cases", "parity_matches",
]

logger = logging.getLogger("tinyagent.evals.bfcl")

BFCL_VERSION = "2026.3.23"
"""The pinned ``bfcl-eval`` release the data is read from."""

DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
"""The categories ``tinyagent eval bfcl`` scores by default."""

CATEGORIES = (*DEFAULT_CATEGORIES, "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
              "live_irrelevance")
"""Every single-turn Python category this checker supports."""

LIVE_CATEGORIES = ("live_simple", "live_multiple", "live_irrelevance")
"""The live categories the held-out BFCL score averages beside :data:`DEFAULT_CATEGORIES`."""

Parity = Literal["even", "odd", "all"]
PARITIES: tuple[Parity, ...] = ("even", "odd", "all")
"""Which cases to load by the parity of their index (odd-indexed cases are kept for judging)."""

_INDEX = re.compile(r"\d+")

_WHEEL_NAME = f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl"
_DATA_PREFIX = "bfcl_eval/data/"
_PYTHON_HINT = " Note that the provided function is in Python 3 syntax."


@dataclass(frozen=True)
class BfclCase:
    """One BFCL test case.

    Attributes:
        id: BFCL's id, e.g. ``"simple_python_0"``.
        category: the category, e.g. ``"simple_python"``.
        messages: the conversation, flattened over BFCL's turns (``{"role", "content"}``).
        functions: the function descriptions offered, in BFCL's dialect (types such as ``"dict"``, ``"float"``).
        ground_truth: the possible answers, one ``{name: {param: [values]}}`` per expected call; empty for the
            irrelevance categories, where the right answer is to call nothing.
    """

    id: str
    category: str
    messages: tuple[dict[str, str], ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, dict[str, list[Any]]], ...] = ()

    @property
    def question(self) -> str:
        """The last user message: what the model must act on."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content", ""))
        return ""

    @property
    def system(self) -> str:
        """The system messages joined, or ``""`` (a few live cases carry one)."""
        return "\n\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def expects_no_call(self) -> bool:
        """Whether the right answer is to call no function at all."""
        return "irrelevance" in self.category


def ensure_data(cache_dir: str | Path | None = None) -> Path:
    """Return the pinned ``bfcl-eval`` wheel, downloading it (without dependencies) into ``cache_dir`` if missing.

    Args:
        cache_dir: where to keep the wheel; defaults to ``bfcl/`` in tinyagent's cache (``$TINYAGENT_CACHE`` or
            the user cache folder).

    Returns:
        The path of the wheel, which :func:`load_cases` reads directly.

    Raises:
        BfclDataError: pip could not download the wheel (no network, or no registry access).
    """
    if cache_dir is None:
        from ..models import cache_dir as tinyagent_cache

        cache_dir = tinyagent_cache() / "bfcl"
    folder = Path(cache_dir)
    wheel = folder / _WHEEL_NAME
    if wheel.is_file():
        return wheel
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               f"bfcl-eval=={BFCL_VERSION}", "-d", str(folder)]
    logger.info("downloading the BFCL data: %s", " ".join(command))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BfclDataError(
            f"could not run pip to download bfcl-eval=={BFCL_VERSION}: {exc}; download it yourself with "
            f"'pip download --no-deps bfcl-eval=={BFCL_VERSION}' and pass the wheel as the data dir"
        ) from exc
    if done.returncode != 0 or not wheel.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise BfclDataError(
            f"pip could not download bfcl-eval=={BFCL_VERSION} into {folder} ({' / '.join(tail)}); download it "
            f"yourself with 'pip download --no-deps bfcl-eval=={BFCL_VERSION}' and pass the wheel as the data dir"
        )
    return wheel


def case_index(case_id: str) -> int:
    """The index of a BFCL case: the first number in its id (``simple_python_49`` -> 49,
    ``live_simple_57-26-1`` -> 57).

    Raises:
        BfclDataError: the id holds no number.
    """
    found = _INDEX.search(case_id)
    if found is None:
        raise BfclDataError(f"BFCL case id {case_id!r} holds no index number")
    return int(found.group())


def check_parity(parity: str) -> Parity:
    """``parity`` as a :data:`Parity`.

    Raises:
        ConfigurationError: it is not ``even``, ``odd`` or ``all``.
    """
    for known in PARITIES:
        if parity == known:
            return known
    raise ConfigurationError(f"unknown index parity {parity!r}; choose from {list(PARITIES)}")


def parity_matches(case_id: str, parity: Parity) -> bool:
    """Whether the case with this id is loaded under ``parity``."""
    if parity == "all":
        return True
    return (case_index(case_id) % 2 == 0) == (parity == "even")


class _DataSource:
    """Reads ``BFCL_v4_<category>.json`` and its possible answers from a wheel or a folder."""

    def __init__(self, location: str | Path) -> None:
        path = Path(location).expanduser()
        self._zip: zipfile.ZipFile | None = None
        self._prefix = ""
        self._folder: Path | None = None
        if path.is_dir() and not (path / "BFCL_v4_simple_python.json").is_file():
            candidates = [path / "bfcl_eval" / "data", path / "data", *sorted(path.glob("bfcl_eval-*.whl"))]
            path = next((c for c in candidates if c.exists()), path)
        if path.is_file():
            try:
                self._zip = zipfile.ZipFile(path)
            except (OSError, zipfile.BadZipFile) as exc:
                raise BfclDataError(f"{path} is not a readable bfcl-eval wheel: {exc}") from exc
            self._prefix = _DATA_PREFIX
        elif path.is_dir():
            self._folder = path
        else:
            raise BfclDataError(
                f"no BFCL data at {path}: pass the bfcl-eval wheel, its extracted folder, or its data folder "
                "(or let tinyagent download it with ensure_data())"
            )
        self.path = path

    def read_lines(self, name: str, key: str = "id") -> list[dict[str, Any]] | None:
        """The JSON lines of ``name`` (each an object holding ``key``), or None when the file is missing."""
        text: str | None = None
        if self._zip is not None:
            try:
                text = self._zip.read(self._prefix + name).decode("utf-8")
            except KeyError:
                return None
        elif self._folder is not None:
            file = self._folder / name
            if not file.is_file():
                return None
            text = file.read_text(encoding="utf-8")
        rows = []
        for number, line in enumerate((text or "").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BfclDataError(f"{self.path}: {name} line {number} is not JSON: {exc}") from exc
            if not isinstance(row, dict) or key not in row:
                raise BfclDataError(f"{self.path}: {name} line {number} is not a BFCL entry")
            rows.append(row)
        return rows

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def load_cases(
    data_dir: str | Path,
    categories: Iterable[str] = DEFAULT_CATEGORIES,
    limit: int | None = None,
    *,
    language_hint: bool = True,
    parity: Parity = "all",
) -> list[BfclCase]:
    """Load BFCL cases, in BFCL's order, the first ``limit`` of each category.

    Args:
        data_dir: the ``bfcl-eval`` wheel, its extracted folder, its ``bfcl_eval/data`` folder, or a folder
            holding the wheel (such as :func:`ensure_data`'s cache).
        categories: category names; see :data:`CATEGORIES`.
        limit: at most this many cases per category; None for all.
        language_hint: append BFCL's "Note that the provided function is in Python 3 syntax." to each function
            description, as BFCL's own inference does.
        parity: ``"even"`` or ``"odd"`` keeps only cases whose index (:func:`case_index`) has that parity, before
            ``limit`` applies; the others are never built. ``"all"`` keeps every case.

    Returns:
        The cases, category by category.

    Raises:
        ConfigurationError: an unknown category or parity, or a negative limit.
        BfclDataError: the data is missing or malformed.
    """
    parity = check_parity(parity)
    wanted = list(dict.fromkeys(categories))
    unknown = [c for c in wanted if c not in CATEGORIES]
    if unknown:
        raise ConfigurationError(f"unknown BFCL categor{'y' if len(unknown) == 1 else 'ies'} {unknown}; "
                                 f"choose from {list(CATEGORIES)}")
    if limit is not None and limit < 0:
        raise ConfigurationError(f"limit must be a positive number of cases per category, got {limit}")
    source = _DataSource(data_dir)
    try:
        cases: list[BfclCase] = []
        for category in wanted:
            cases.extend(_load_category(source, category, limit, language_hint, parity))
        return cases
    finally:
        source.close()


def _load_category(source: _DataSource, category: str, limit: int | None, language_hint: bool,
                   parity: Parity) -> list[BfclCase]:
    name = f"BFCL_v4_{category}.json"
    entries = source.read_lines(name)
    if entries is None:
        raise BfclDataError(f"{source.path} has no {name}; is it the bfcl-eval {BFCL_VERSION} data?")
    entries = [e for e in entries if parity_matches(str(e["id"]), parity)]
    if limit is not None:
        entries = entries[:limit]
    answers: dict[str, Any] = {}
    if "irrelevance" not in category:
        answer_rows = source.read_lines(f"possible_answer/{name}")
        if answer_rows is None:
            raise BfclDataError(f"{source.path} has no possible_answer/{name}")
        answers = {row["id"]: row.get("ground_truth") for row in answer_rows}
    cases = []
    for entry in entries:
        case_id = str(entry["id"])
        try:
            messages = tuple(
                {"role": str(m["role"]), "content": str(m.get("content") or "")}
                for turn in entry["question"]
                for m in turn
            )
            functions = tuple(_with_hint(dict(f), language_hint) for f in entry["function"])
        except (KeyError, TypeError) as exc:
            raise BfclDataError(f"{source.path}: case {case_id} is malformed ({exc!r})") from exc
        truth: tuple[dict[str, dict[str, list[Any]]], ...] = ()
        if "irrelevance" not in category:
            raw = answers.get(case_id)
            if not isinstance(raw, list) or not raw or not all(isinstance(c, dict) and len(c) == 1 for c in raw):
                raise BfclDataError(f"{source.path}: case {case_id} has no usable possible answer")
            truth = tuple(raw)
        cases.append(BfclCase(case_id, category, messages, functions, truth))
    return cases


def _with_hint(function: dict[str, Any], language_hint: bool) -> dict[str, Any]:
    if language_hint:
        function["description"] = str(function.get("description") or "") + _PYTHON_HINT
    return function
