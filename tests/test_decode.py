"""The greedy draft-and-verify decoder: prompt lookup, stop strings, and the same plans token for token with and
without fast-forward and speculation (real GGUFs), and the same text as llama-cpp-python's own loop.

Free text is not compared: llama.cpp's CPU kernels round a batch of rows differently from one row (up to ~1 logit
on a long context, measured), so where the model's two best tokens are that close, any change of batching (the
prompt's, the prefix cache's, the drafts') may pick the other one. Under the plan grammar such ties are rare.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tinyagent import Agent, tool
from tinyagent.models import Completion, ModelRequest
from tinyagent.models.llama._decode import _ended, _lookup, _Text


class _Detok:
    """A stand-in for ``Llama.detokenize``: token i is the i-th string."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    def detokenize(self, tokens: list[int], prev_tokens: Any = None) -> bytes:
        return "".join(self.pieces[t] for t in tokens).encode()


def test_lookup_copies_what_followed_the_last_ngram() -> None:
    history = [1, 2, 3, 4, 5, 6, 9, 9, 2, 3, 4]
    assert _lookup(history, 3) == [5, 6, 9]  # "2 3 4" seen before, followed by 5 6 9
    assert _lookup([1, 2, 3], 4) == []  # nothing repeats
    assert _lookup([7, 8, 1, 7, 8], 2) == [1, 7]  # falls back to a bigram


def test_text_cuts_at_a_stop_string_and_holds_back_its_prefix() -> None:
    llm = _Detok(["1. a()", "\n", "<END", "_OF", "_PLAN>", "tail"])
    text = _Text(llm, ["<END_OF_PLAN>"])
    assert not text.add(0) and not text.add(1)
    assert text.ready() == "1. a()\n"
    assert not text.add(2)
    assert text.ready() == ""  # "<END" may start the stop string: held back
    assert not text.add(3)
    assert text.add(4)  # the stop string is complete
    assert text.text == "1. a()\n" and text.ready(final=True) == ""


def test_under_a_grammar_only_the_grammar_ends_the_text() -> None:
    """A model composing a value may write the stop string inside it (seen on the 1.5B: ``message_body="...
    <END_OF_PLAN>...``); with a grammar that does not end the text, the grammar's own end does (and is cut)."""

    class Chooser:
        finished = False

    chooser = Chooser()
    llm = _Detok(['body="x ', "<END_OF_PLAN>", ' y")', "\n2. join()\n", "<END_OF_PLAN>"])
    text = _Text(llm, ["<END_OF_PLAN>"], grammar=True)
    assert not any(_ended(text, chooser, t) for t in range(4))  # type: ignore[arg-type]
    chooser.finished = True
    assert _ended(text, chooser, 4)  # type: ignore[arg-type]
    assert text.text == 'body="x <END_OF_PLAN> y")\n2. join()\n'
    plain = _Text(_Detok(['body="x ', "<END_OF_PLAN>"]), ["<END_OF_PLAN>"])
    assert not _ended(plain, Chooser(), 0) and _ended(plain, Chooser(), 1)  # type: ignore[arg-type]


def test_text_releases_a_held_back_prefix_that_did_not_stop() -> None:
    text = _Text(_Detok(["x <", "b>"]), ["<END>"])
    assert not text.add(0)
    assert text.ready() == "x "
    assert not text.add(1)
    assert text.ready() == "<b>"


def test_utf8_split_across_tokens_is_decoded_once_whole() -> None:
    class Bytes:
        def detokenize(self, tokens: list[int], prev_tokens: Any = None) -> bytes:
            return [b"caf", b"\xc3", b"\xa9!"][tokens[0]]

    text = _Text(Bytes(), [])
    for t in range(3):
        text.add(t)
    assert text.text == "café!"


# -- real models --------------------------------------------------------------------------------------------------
@tool(effects="read")
def get_email_address(name: str) -> str:
    """Look up a contact's email address.

    Args:
        name: the contact's name.
    """
    return f"{name.lower()}@example.com"


@tool(effects="outgoing")
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email.

    Args:
        to: recipients' email addresses.
        subject: the subject line.
        body: the message.
    """
    return "sent"


@tool(effects="write")
def create_calendar_event(title: str, start: str, duration_minutes: int = 60) -> str:
    """Put an event on the calendar.

    Args:
        title: what it is.
        start: when it starts, YYYY-MM-DDTHH:MM.
        duration_minutes: how long.
    """
    return "created"


TODAY = dt.date(2026, 11, 30)  # pinned: with the real date the prompt, and so its near-ties, changed every day
QUERIES = [
    "Email Sid that lunch moved to noon and put lunch with Sid on my calendar for 2026-12-02 at 12:00",
    "Send Anna and Bob an email titled Budget saying the budget is approved",
]


def _planner_request(model: Any, query: str) -> ModelRequest:
    """The planner's real request for ``query`` (captured from the agent)."""
    captured: list[ModelRequest] = []

    class Capture:
        name = "capture"
        supports_grammar = True
        pricing = model.pricing

        def count_tokens(self, text: str) -> int:
            return int(model.count_tokens(text))

        def prompt_tokens(self, messages: Any) -> int:
            return int(model.prompt_tokens(messages))

        async def stream(self, request: ModelRequest) -> Any:
            captured.append(request)
            yield Completion(text="1. join()\n", model="capture")

    agent = Agent(tools=[get_email_address, send_email, create_calendar_event], model=model)
    original = model.stream
    model.stream = Capture().stream  # type: ignore[method-assign]
    try:
        agent.plan_sync(query, today=TODAY)  # (a pinned day: the prompt, and so its near-ties, change with it)
    finally:
        model.stream = original  # type: ignore[method-assign]
    return captured[0]


def _complete(model: Any, request: ModelRequest, decoder: str) -> tuple[str, list[int] | None, Any]:
    model.decoder = decoder

    async def go() -> Completion:
        final = None
        async for item in model.stream(request):
            if isinstance(item, Completion):
                final = item
        assert final is not None
        return final

    completion = asyncio.run(go())
    stats = model.last_decode
    return completion.text, (list(stats.token_ids) if stats else None), stats


def _check_same_plans(model: Any) -> list[Any]:
    all_stats = []
    for query in QUERIES:
        request = _planner_request(model, query)
        assert request.grammar and request.temperature == 0
        plain_text, plain_ids, _ = _complete(model, request, "greedy")
        fast_text, fast_ids, stats = _complete(model, request, "speculative")
        llama_text, _, _ = _complete(model, request, "llama")
        assert fast_ids == plain_ids, query  # token for token
        assert fast_text == plain_text == llama_text, query
        assert "join()" in fast_text
        assert stats.forward_passes < stats.tokens  # some tokens came in batches
        all_stats.append(stats)
    return all_stats


@pytest.mark.slow
def test_same_plans_with_and_without_speculation_smollm2(smollm2_path: Path) -> None:
    from tinyagent.models import LlamaCppModel

    model = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    _check_same_plans(model)


@pytest.mark.slow
def test_same_plans_with_and_without_speculation_default_model() -> None:
    from tinyagent.errors import ModelIntegrityError
    from tinyagent.models import LlamaCppModel

    try:
        model = LlamaCppModel("qwen2.5-coder-1.5b", n_threads=2, prefix_cache_dir=None)
    except ModelIntegrityError as exc:
        pytest.skip(f"default model not available: {exc}")
    stats = _check_same_plans(model)
    assert sum(s.accepted for s in stats) >= sum(s.tokens for s in stats) // 3  # a third or more came in batches


def test_lookup_drafts_are_cut_to_the_length_that_pays() -> None:
    from tinyagent.models.llama._decode import LookupRate

    sure = LookupRate(prior=0.95)
    assert sure.length(5, probe=False) == 5  # 0.95**5 = 0.77 >= 0.55
    unsure = LookupRate(prior=0.75)
    assert unsure.length(5, probe=False) == 2  # 0.75**2 = 0.56, 0.75**3 = 0.42
    assert sure.length(2, probe=False) == 2  # never past the room left
    for _ in range(10):
        unsure.update(drafted=3, accepted=0)  # every guess wrong
    assert unsure.rate < 0.55
    assert unsure.length(5, probe=False) == 0  # no more lookup drafts ...
    assert unsure.length(5, probe=True) == 1  # ... but a one-token probe at the start of a request
    for _ in range(20):
        unsure.update(drafted=2, accepted=2)
    assert unsure.length(5, probe=False) >= 2  # it recovers when the guesses are right again


class _ForcingChooser:
    """A chooser whose grammar forces ``forced`` next and then allows anything up to ``allowed`` tokens."""

    def __init__(self, forced: list[int], allowed: int = 99) -> None:
        self._forced = forced
        self._allowed = allowed

    def forced(self) -> list[int]:
        return list(self._forced)

    def allowed_prefix(self, draft: list[int]) -> list[int]:
        return draft[: self._allowed]


def test_a_draft_is_the_forced_run_else_a_lookup_guess() -> None:
    from tinyagent.models.llama._decode import LookupRate, _draft

    history = [5, 6, 7, 8, 9, 1, 5, 6]  # "5 6" was followed by "7 8 9"
    draft, forced = _draft(_ForcingChooser([7]), history, room=50, lookup=LookupRate(prior=0.95), probe=False)  # type: ignore[arg-type]
    assert (draft, forced) == ([7], 1)  # no guess after a forced run: it ends where the plan chooses
    draft, forced = _draft(_ForcingChooser([]), history, 50, LookupRate(prior=0.95), False)  # type: ignore[arg-type]
    assert (draft, forced) == ([7, 8, 9, 1, 5], 0)
    draft, forced = _draft(_ForcingChooser([], allowed=2), history, 50, LookupRate(prior=0.95), False)  # type: ignore[arg-type]
    assert (draft, forced) == ([7, 8], 0)  # the grammar cuts the guess
    draft, forced = _draft(_ForcingChooser([7, 7, 7]), history, 3, LookupRate(prior=0.95), False)  # type: ignore[arg-type]
    assert (draft, forced) == ([7, 7], 2)  # never past the room left


def test_a_preference_asks_for_logits_only_where_its_pattern_applies() -> None:
    from tinyagent.models import Preference
    from tinyagent.models.llama._processors import _Preferences

    prefs = _Preferences(None, [Preference("stop", r"\n\d+\. ?\Z", "join")])  # type: ignore[arg-type]
    assert prefs.needs("1. a()\n2. ")
    assert not prefs.needs("1. a(x=")
    from tinyagent.models.llama._decode import DecodeStats, _Chooser
    from tinyagent.models.llama._processors import _LogprobTracker

    assert not _Chooser(None, [prefs], DecodeStats()).needs("1. a(x=")
    assert _Chooser(None, [prefs, _LogprobTracker()], DecodeStats()).needs("1. a(x=")  # a tracker sees every token
    assert not _Chooser(None, [], DecodeStats()).needs("")


@pytest.mark.slow
def test_a_full_context_ends_the_output_and_a_prompt_too_long_is_a_clear_error(smollm2_path: Path) -> None:
    """The context filling up mid-answer ends it with finish reason "length" (it was "llama_decode returned 1");
    a prompt longer than the context is a one-line ModelError that says what to do."""
    from tinyagent.errors import ModelError
    from tinyagent.models import LlamaCppModel

    model = LlamaCppModel(path=smollm2_path, n_threads=2, n_ctx=256, prefix_cache_dir=None)
    words = " ".join(f"item{i}" for i in range(60))
    request = ModelRequest(messages=[{"role": "user", "content": f"Repeat these words forever: {words}"}],
                           max_tokens=400)
    done = asyncio.run(model.complete(request))
    assert done.finish_reason == "length"
    assert done.usage.input_tokens + done.usage.output_tokens <= 256
    too_long = ModelRequest(messages=[{"role": "user", "content": words * 4}], max_tokens=10)
    with pytest.raises(ModelError, match="context holds 256"):
        asyncio.run(model.complete(too_long))
