"""``LlamaCppModel.prefill``: a prompt evaluated ahead in pieces answers exactly as the whole prompt at once (greedy),
on a real GGUF (SmolLM2-135M)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent._prompts import build_joiner_followup
from tinyagent.models import LlamaCppModel, ModelRequest

PLANNER = [{"role": "system", "content": "You plan tool calls for the user's request.\n" * 8},
           {"role": "user", "content": "Request: email Sid the standup notes"}]
PLAN = '1. get_email_address(name="Sid")\n2. open_note(title="standup")\n3. send_email(to=[$1], body=$2)\n4. join()'
LINES = ["1. get_email_address -> sid@example.com", "2. open_note -> # Standup\n- Sid: payments API done",
         '3. send_email -> {"to":["sid@example.com"],"status":"queued"}']


def _messages(lines: list[str], open_end: bool = False) -> list[dict[str, str]]:
    return build_joiner_followup(PLANNER, PLAN, "email Sid the standup notes", lines, allow_replan=False,
                                 boundary="DATA-00ff", open_end=open_end)


async def _answer(model: LlamaCppModel) -> tuple[str, list[int]]:
    completion = await model.complete(ModelRequest(messages=_messages(LINES), max_tokens=20))
    assert model.last_decode is not None
    return completion.text, list(model.last_decode.token_ids)


@pytest.mark.slow
async def test_incremental_prefill_answers_token_for_token_like_one_shot(smollm2_path: Path) -> None:
    one_shot = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    await one_shot.complete(ModelRequest(messages=PLANNER, max_tokens=4))  # the planner's call came first
    expected = await _answer(one_shot)
    full = one_shot.last_prompt_tokens_evaluated
    assert expected[1] and full is not None and full > 60

    model = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    await model.complete(ModelRequest(messages=PLANNER, max_tokens=4))
    evaluated = [await model.prefill(_messages(LINES[:k], open_end=True)) for k in range(len(LINES))]
    assert evaluated[0] > 40 and all(n > 5 for n in evaluated[1:])  # the instruction, then one line each
    assert await model.prefill(_messages(LINES[:2], open_end=True)) == 0  # already in the KV cache
    assert await _answer(model) == expected
    left = model.last_prompt_tokens_evaluated
    # only the last line, the block's end and the instruction were left
    assert left is not None and left < full // 2 and sum(evaluated) + left >= full - 2


@pytest.mark.slow
async def test_a_prefill_that_parts_from_the_prompt_changes_nothing(smollm2_path: Path) -> None:
    model = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    expected = await _answer(model)
    other = [*LINES[:1], "2. open_note -> something else entirely"]
    assert await model.prefill(_messages(other, open_end=True)) > 0
    assert await _answer(model) == expected
