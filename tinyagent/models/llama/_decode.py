"""Greedy draft-and-verify decoding: the plan's known tokens are evaluated as a batch, at prompt speed.

A plan's structure is known. After ``send_em`` the grammar allows only ``ail(to=``; the step number after a newline,
``join()`` at the end and most punctuation are forced too; and plans copy names, dates and phrases from the request.
Decoding those tokens one at a time costs a full forward pass each (memory-bound: ~40 ms for the 1.5B on two
cores), while a batch of eight costs little more than one. So each step proposes a *draft* of the tokens that
probably follow, and one forward pass over ``[chosen token, *draft]`` returns logits for every position:

* **forced tokens** (llguidance's ``compute_ff_tokens``: the only continuation the grammar allows), else
* **prompt lookup**: the tokens that followed the latest occurrence of the last few generated tokens in the prompt
  or in the output so far, cut to what the grammar allows.

Each *guessed* token is then verified: the model's own greedy choice at its position (with the grammar's mask and
the logits processors, exactly as plain decoding would choose) must equal it; the first mismatch ends the draft, its
KV cells are dropped, and the model's choice there is the next token. A forced token needs no check (the grammar
allows nothing else), so the batch asks llama.cpp for no logits at its position, which saves the output layer (150k
rows, about a sixth of a token's work) for each; only a logits processor that watches that position (:meth:`needs`,
a log-probability tracker always) gets them. So the output is the plain greedy output (tests check it token for
token on a real GGUF), and a wrong guess costs only the batch's extra width.

The grammar runs in llguidance (the engine behind llama.cpp's ``%llguidance``): the planner's GBNF is converted to
its Lark dialect once per grammar; a token is checked against it in microseconds, and the full-vocabulary mask is
computed only when the model's favourite token is not allowed.
"""

from __future__ import annotations

import codecs
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ModelError

log = logging.getLogger("tinyagent.models.llama")

__all__ = ["DecodeStats", "GrammarEngine", "LookupRate", "cut_stop", "greedy_decode"]

# On a CPU a batch is compute-bound: each extra token costs about half a single-token pass (measured on 2 cores:
# 1 token 43 ms, 4 tokens 108 ms, 8 tokens 240 ms for the 1.5B), so a draft pays only where most of it is accepted.
# Forced tokens always are; prompt-lookup guesses about two thirds of the time, so they are kept short.
_MAX_FORCED = 12
_MAX_LOOKUP = 5
_LOOKUP_NGRAMS = (4, 3, 2)
# A drafted token costs ~0.55 of a one-token pass (the figures above), so the k-th token of a prompt-lookup draft pays
# only while the chance that the first k are all accepted stays above that.
_PAYOFF = 0.55


class LookupRate:
    """How often this model's prompt-lookup guesses were right: a running average kept across requests.

    Prompt lookup guesses well where plans copy from the request (names, dates, phrases) and badly where the prompt
    holds many similar contexts with other values (worked examples with other names after ``name="``). A draft is cut
    to the length whose chance of being accepted whole stays above :data:`_PAYOFF`; below it no lookup draft is made,
    except a one-token probe at the start of each request, so the rate can recover.
    """

    def __init__(self, prior: float = 0.7, weight: float = 0.1) -> None:
        self.rate = prior
        self._weight = weight

    def length(self, limit: int, probe: bool) -> int:
        """How many lookup tokens to draft, at most ``limit``."""
        if self.rate < _PAYOFF:
            return min(1, limit) if probe else 0
        k, p = 1, self.rate
        while k < limit and p ** (k + 1) >= _PAYOFF:
            k += 1
        return min(k, limit)

    def update(self, drafted: int, accepted: int) -> None:
        """Record a draft of ``drafted`` tokens whose first ``accepted`` were right (the next one, if any, was not)."""
        for hit in [1.0] * accepted + ([0.0] if accepted < drafted else []):
            self.rate += self._weight * (hit - self.rate)


@dataclass
class DecodeStats:
    """What one greedy decode did.

    Attributes:
        tokens: tokens generated (the completion's length).
        forward_passes: model evaluations after the prompt (one per batch).
        drafted: draft tokens proposed; ``accepted`` of them matched the model's own choice.
        forced: accepted tokens that came from the grammar's forced continuation.
        masks: full-vocabulary grammar masks computed (the model's favourite was not allowed).
        prompt_s: seconds to evaluate the prompt (the part not already in the KV cache) and choose the first token.
        decode_s: seconds from then to the end: ``tokens - 1`` more tokens.
    """

    tokens: int = 0
    forward_passes: int = 0
    drafted: int = 0
    accepted: int = 0
    forced: int = 0
    masks: int = 0
    prompt_s: float = 0.0
    decode_s: float = 0.0
    finish: str = "stop"
    text: str = ""
    token_ids: list[int] = field(default_factory=list)


class GrammarEngine:
    """llguidance for one model: its tokenizer (built once, in the background) and compiled grammars (memoised)."""

    def __init__(self, llm: Any, vocab_cache: Path | None = None) -> None:
        self._llm = llm
        self._vocab_cache = vocab_cache
        self._tokenizer: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._grammars: dict[str, str] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._build, name="tinyagent-lltokenizer", daemon=True).start()

    def _build(self) -> None:
        try:
            from ._vocab import lltokenizer

            self._tokenizer = lltokenizer(self._llm._model.vocab, self._vocab_cache)
        except Exception as exc:  # noqa: BLE001 - no llguidance, or an odd vocabulary: plain decoding is used
            self._error = exc
            log.info("llguidance unavailable for this model (greedy requests use llama-cpp-python's loop): %s", exc)
        finally:
            self._ready.set()

    def wait(self) -> None:
        """Until the tokenizer is built (or failed)."""
        self._ready.wait()

    @property
    def available(self) -> bool:
        """Whether llguidance can run for this model (waits for the tokenizer)."""
        self._ready.wait()
        return self._tokenizer is not None

    def matcher(self, gbnf: str) -> Any:
        """A fresh llguidance matcher for a GBNF grammar, or None where it cannot be compiled."""
        if not self.available:
            return None
        import llguidance

        with self._lock:
            lark = self._grammars.get(gbnf)
            if lark is None:
                try:
                    from llguidance.gbnf_to_lark import gbnf_to_lark

                    lark = llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(gbnf))
                except Exception as exc:  # noqa: BLE001 - a grammar llguidance cannot take: plain decoding
                    log.debug("llguidance cannot take this grammar: %s", exc)
                    return None
                if len(self._grammars) > 64:
                    self._grammars.clear()
                self._grammars[gbnf] = lark
        matcher = llguidance.LLMatcher(self._tokenizer, lark, log_level=0)
        return None if matcher.is_error() else matcher


class _Sequence:
    """The llama context's token sequence: evaluate batches, read logits, drop rejected positions."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp
        import numpy as np

        self._llm = llm
        self._api = llama_cpp
        self._np = np
        self.n_vocab = int(llm.n_vocab())

    @property
    def n(self) -> int:
        return int(self._llm.n_tokens)

    def start(self, prompt: Sequence[int]) -> Any:
        """Evaluate ``prompt`` after the longest prefix already in the KV cache; return the last position's logits."""
        llm = self._llm
        common = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)  # at least one token is evaluated: its logits are needed
        self.truncate(common)
        llm.eval(list(prompt[common:]))
        llm._requires_eval = False
        return self._logits(-1)

    def extend(self, tokens: Sequence[int], wanted: Sequence[bool] | None = None) -> list[Any]:
        """Evaluate ``tokens`` as one batch and return the logits after each of them (None where ``wanted`` says
        they are not needed: llama.cpp then skips the output layer there; the last position always has them)."""
        llm = self._llm
        n_past = self.n
        llm._batch.set_batch(batch=list(tokens), n_past=n_past, logits_all=True)
        flags = [True] * len(tokens) if wanted is None else [bool(w) for w in wanted[: len(tokens)]]
        flags[-1] = True
        for i, flag in enumerate(flags):
            llm._batch.batch.logits[i] = flag
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(tokens)] = tokens
        llm.n_tokens = n_past + len(tokens)
        return [self._logits(i) if flag else None for i, flag in enumerate(flags)]

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` positions."""
        if self._llm.n_tokens > n:
            self._llm._ctx.kv_cache_seq_rm(-1, n, -1)
        self._llm.n_tokens = n

    def ids(self) -> Any:
        return self._llm.input_ids[: self.n]

    def _logits(self, i: int) -> Any:
        ptr = self._api.llama_get_logits_ith(self._llm._ctx.ctx, i)
        return self._np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()


class _Chooser:
    """The greedy choice at one position: logits processors, then the best token the grammar allows."""

    def __init__(self, matcher: Any, processors: Sequence[Callable[[Any, Any], Any]], stats: DecodeStats) -> None:
        import numpy as np

        self._np = np
        self.matcher = matcher
        self._processors = processors
        self._stats = stats

    def needs(self, text: str) -> bool:
        """Whether a logits processor must see the position where the text so far is ``text`` (one without a
        ``needs`` method, such as the log-probability tracker, sees every position)."""
        return any(not hasattr(p, "needs") or p.needs(text) for p in self._processors)

    def choose(self, input_ids: Any, scores: Any) -> int:
        np = self._np
        for processor in self._processors:
            scores = processor(input_ids, scores)
        top = int(np.argmax(scores))
        if self.matcher is None or self.matcher.validate_tokens([top]) == 1:
            return top
        self._stats.masks += 1
        mask = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(mask, bitorder="little")[: len(scores)].astype(bool)
        if not allowed.any():
            return top
        return int(np.argmax(np.where(allowed, scores, -np.inf)))

    def accept(self, token: int) -> None:
        if self.matcher is not None:
            self.matcher.consume_token(token)

    def forced(self) -> list[int]:
        if self.matcher is None or self.matcher.is_stopped():
            return []
        return list(self.matcher.compute_ff_tokens())

    def allowed_prefix(self, draft: list[int]) -> list[int]:
        if self.matcher is None or not draft:
            return draft
        return draft[: int(self.matcher.validate_tokens(draft))]

    @property
    def finished(self) -> bool:
        return self.matcher is not None and self.matcher.is_stopped()


def _lookup(history: list[int], limit: int) -> list[int]:
    """Prompt lookup: what followed the latest earlier occurrence of the last few tokens of ``history``."""
    for n in _LOOKUP_NGRAMS:
        if len(history) <= n:
            continue
        tail = history[-n:]
        for start in range(len(history) - n - 1, -1, -1):
            if history[start : start + n] == tail:
                return history[start + n : start + n + limit]
    return []


class _Text:
    """Detokenises incrementally and holds back text that may be the start of a stop string."""

    def __init__(self, llm: Any, stop: Sequence[str], *, grammar: bool = False) -> None:
        self._llm = llm
        self._stop = [s for s in stop if s]
        self._grammar = grammar  # the grammar ends the text: a stop string inside a value does not
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tokens: list[int] = []
        self.text = ""
        self._sent = 0

    def add(self, token: int) -> bool:
        """Append ``token``; True when a stop string has appeared (the text is cut before it)."""
        piece = self._llm.detokenize([token], prev_tokens=self._tokens or None)
        self._tokens.append(token)
        self.text += self._decoder.decode(piece)
        if self._grammar:
            return False
        for s in self._stop:
            at = self.text.find(s, max(0, self._sent - len(s)))
            if at >= 0:
                self.text = self.text[:at]
                return True
        return False

    def end(self) -> None:
        """The grammar has ended the text: cut the stop string it ends with."""
        self.text = cut_stop(self.text, self._stop)

    def peek(self, tokens: Sequence[int]) -> list[str]:
        """The text so far, then after each of ``tokens`` in turn (nothing is added)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        decoder.setstate(self._decoder.getstate())
        prev, text, out = list(self._tokens), self.text, [self.text]
        for token in tokens:
            text += decoder.decode(self._llm.detokenize([token], prev_tokens=prev or None))
            prev.append(token)
            out.append(text)
        return out

    def ready(self, final: bool = False) -> str:
        """The text not yet sent that can no longer turn into a stop string."""
        end = len(self.text)
        if not final:
            for s in self._stop:
                for k in range(min(len(s) - 1, len(self.text)), 0, -1):
                    if s.startswith(self.text[-k:]):
                        end = min(end, len(self.text) - k)
                        break
        out, self._sent = self.text[self._sent : end], max(self._sent, end)
        return out


def greedy_decode(
    llm: Any,
    prompt: Sequence[int],
    *,
    matcher: Any = None,
    max_tokens: int = 512,
    stop: Sequence[str] = (),
    processors: Sequence[Callable[[Any, Any], Any]] = (),
    speculate: bool = True,
    on_text: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    lookup: LookupRate | None = None,
) -> DecodeStats:
    """Greedy decoding of ``prompt`` with grammar ``matcher`` (llguidance, or None) and draft-and-verify batches.

    Args:
        llm: a ``llama_cpp.Llama``; its KV cache prefix is reused and left holding the prompt and output.
        prompt: the prompt's token ids.
        matcher: an llguidance ``LLMatcher`` for the grammar, or None for free text.
        max_tokens: the most tokens to generate (fewer when the context fills first).
        stop: strings that end the output (not included in it).
        processors: logits processors ``(input_ids, scores) -> scores``, run at every position, drafted or not.
        speculate: propose drafts (False: one token per forward pass; the output is the same).
        on_text: called with each new piece of text that is final.
        cancelled: polled between batches; True stops with finish reason ``"cancelled"``.
        lookup: the model's running prompt-lookup acceptance (how long lookup drafts may be); None: a fresh one.
    """
    max_tokens = _room(llm, prompt, max_tokens)
    stats = DecodeStats()
    seq = _Sequence(llm)
    chooser = _Chooser(matcher, processors, stats)
    text = _Text(llm, stop, grammar=matcher is not None)
    eos = {int(llm.token_eos())}
    history = [int(t) for t in prompt]
    lookup = lookup or LookupRate()
    probe = True
    started = time.perf_counter()
    logits = seq.start(prompt)
    token = chooser.choose(seq.ids(), logits)
    first = time.perf_counter()
    stats.prompt_s = first - started
    while True:
        if cancelled is not None and cancelled():
            stats.finish = "cancelled"
            break
        if token in eos:
            stats.finish = "stop"
            break
        chooser.accept(token)
        history.append(token)
        stats.tokens += 1
        if _ended(text, chooser, token):
            stats.finish = "stop"
            break
        if stats.tokens >= max_tokens:
            stats.finish = "length"
            break
        draft, forced = _draft(chooser, history, max_tokens - stats.tokens, lookup, probe) if speculate else ([], 0)
        stats.drafted += len(draft)
        stats.forward_passes += 1
        batch_logits = seq.extend([token, *draft], _wanted(chooser, text, draft, forced))
        before = stats.accepted
        token, done = _verify(seq, chooser, text, history, draft, forced, batch_logits, stats)
        if draft and not forced:
            lookup.update(len(draft), stats.accepted - before)
            probe = False
        if on_text is not None:
            piece = text.ready()
            if piece:
                on_text(piece)
        if done:
            break
    if on_text is not None:
        piece = text.ready(final=True)
        if piece:
            on_text(piece)
    stats.text = text.text
    stats.token_ids = history[len(prompt):]
    stats.decode_s = time.perf_counter() - first
    return stats


def _room(llm: Any, prompt: Sequence[int], max_tokens: int) -> int:
    """The most tokens the output may take: ``max_tokens``, or fewer when the context fills first (the output then
    ends with finish reason "length", as at ``max_tokens``). Raises ModelError when the prompt alone fills it."""
    room = int(llm.n_ctx()) - len(prompt)
    if room < 1:
        raise ModelError(f"the prompt is {len(prompt)} tokens and the model's context holds {int(llm.n_ctx())}: "
                         "offer fewer tools or examples, or load the model with a larger n_ctx")
    return min(max_tokens, room)


def cut_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` without the first of the ``stop`` strings it ends with (a grammar's end marker)."""
    for s in stop:
        if s and text.endswith(s):
            return text[: len(text) - len(s)]
    return text


def _ended(text: _Text, chooser: _Chooser, token: int) -> bool:
    """Append ``token``; True when the text has ended (a stop string without a grammar, else the grammar's end)."""
    if text.add(token):
        return True
    if chooser.finished:
        text.end()
        return True
    return False


def _draft(chooser: _Chooser, history: list[int], room: int, lookup: LookupRate,
           probe: bool) -> tuple[list[int], int]:
    """The draft after the last accepted token (the grammar's forced run, else a prompt-lookup guess), and how many
    of its tokens are forced.

    A guess does not follow a forced run: a run ends where the plan chooses (a value after ``name="``, the next
    tool), and what followed the same n-gram before (a worked example's name) is rarely right there; measured on
    the latency benchmark, such guesses lowered the lookup rate until the good ones inside copied values stopped.
    """
    if room <= 1:
        return [], 0
    forced = chooser.forced()[: min(_MAX_FORCED, room - 1)]
    if forced:
        return forced, len(forced)
    n = lookup.length(min(_MAX_LOOKUP, room - 1), probe)
    return (chooser.allowed_prefix(_lookup(history, n)), 0) if n else ([], 0)


def _wanted(chooser: _Chooser, text: _Text, draft: list[int], forced: int) -> list[bool]:
    """Which positions of the batch ``[token, *draft]`` need logits: where a guess is checked or the next token is
    chosen; before a forced token only where a logits processor watches the text there."""
    return [j >= forced or chooser.needs(t) for j, t in enumerate(text.peek(draft[:forced]))] + \
        [True] * (len(draft) - forced)


def _verify(seq: _Sequence, chooser: _Chooser, text: _Text, history: list[int], draft: list[int], forced: int,
            batch_logits: list[Any], stats: DecodeStats) -> tuple[int, bool]:
    """Accept the draft's tokens while the model's own choice agrees (a forced token is the only one the grammar
    allows: it is taken, after the processors saw its logits where they asked to); return the next token and
    whether to stop."""
    base = seq.n - len(draft)  # positions up to and including the chosen token
    eos = {int(seq._llm.token_eos())}
    for j, drafted in enumerate(draft):
        logits = batch_logits[j]
        choice = chooser.choose(seq._llm.input_ids[: base + j], logits) if logits is not None else drafted
        if (choice != drafted and j >= forced) or drafted in eos:
            seq.truncate(base + j)
            return choice, False
        chooser.accept(drafted)
        history.append(drafted)
        stats.tokens += 1
        stats.accepted += 1
        stats.forced += int(j < forced)
        if _ended(text, chooser, drafted):
            seq.truncate(base + j + 1)
            stats.finish = "stop"
            return drafted, True
    return chooser.choose(seq.ids(), batch_logits[len(draft)]), False
