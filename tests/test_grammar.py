"""Grammar generation: structure checks, a fuzz over random tool schemas, and llama.cpp accepting the output."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent import GrammarOptions, Tool, tool
from tinyagent._grammar import check_gbnf, joiner_grammar, plan_grammar
from tinyagent.errors import ConfigurationError, ToolDefinitionError


@tool
def get_email_address(name: str) -> str:
    """Look up an email address."""
    return name


@tool
def send_email(to: list[str], subject: str, body: str = "", priority: int | None = None) -> str:
    """Send an email."""
    return "ok"


def test_plan_grammar_names_only_offered_tools_and_their_params() -> None:
    g = plan_grammar([get_email_address, send_email], options=GrammarOptions(max_steps=3))
    assert '"get_email_address("' in g and '"send_email("' in g
    assert '"to="' in g and '"subject="' in g
    assert "step-4 ::= \"4. \" \"join()\\n<END_OF_PLAN>\"" in g  # max_steps caps the plan
    # step 1 may reference nothing; step 3 may reference $1 and $2 only
    assert "ref-1" not in g
    assert 'ref-3 ::= "$2" | "$1"' in g


def test_replan_grammar_continues_numbering_and_allows_prior_refs() -> None:
    g = plan_grammar([send_email], first_step=4, prior_steps=[1, 3], options=GrammarOptions(max_steps=2))
    assert g.startswith("root ::= step-4")
    assert 'ref-4 ::= "$3" | "$1"' in g


def test_empty_tool_set_allows_only_join() -> None:
    g = plan_grammar([])
    assert 'step-1 ::= "1. " "join()\\n<END_OF_PLAN>"' in g


def test_enums_are_literal_alternatives() -> None:
    t = Tool.from_openai({"name": "set_mode", "parameters": {"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["on", "off"]}}, "required": ["mode"]}})
    g = plan_grammar([t])
    assert '"\\"on\\"" | "\\"off\\""' in g


@pytest.mark.parametrize(
    ("grammar", "match"),
    [
        ("rule ::= \"a\"", "no 'root'"),
        ("root ::= missing", "undefined"),
        ("root ::= ( \"a\"", "unmatched"),
        ("root ::= \"a\"\nroot ::= \"b\"", "twice"),
        ("root ::= root \"a\"", "left-recursive"),
        ("root ::= x\nx ::= y \"a\"\ny ::= x", "left-recursive"),
        ("root ::= \"a", "cannot read"),
    ],
)
def test_check_rejects_invalid_grammars(grammar: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        check_gbnf(grammar)


def test_joiner_grammar() -> None:
    assert '"Replan: "' in joiner_grammar(True)
    assert "Replan" not in joiner_grammar(False)


_names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_leaf = st.sampled_from([
    {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "float"},
    {"type": "string", "enum": ["a", "b\"q", "c\\d"]}, {"type": "any"}, {}, {"type": ["string", "null"]},
    {"type": "string", "maxLength": 5}, {"type": "integer", "enum": [1, 2]},
])


def _schemas(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    if depth == 0:
        return _leaf
    inner = _schemas(depth - 1)
    return st.one_of(
        _leaf,
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda p: {"type": "object", "properties": p, "required": list(p)[:1]},
                  st.dictionaries(_names, inner, max_size=3)),
        st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
    )


_tool_specs = st.lists(
    st.builds(
        lambda name, props, nreq: {"name": name, "description": "d", "parameters": {
            "type": "object", "properties": props, "required": list(props)[:nreq]}},
        _names, st.dictionaries(st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,8}", fullmatch=True), _schemas(),
                                max_size=5),
        st.integers(0, 5),
    ),
    min_size=0, max_size=4, unique_by=lambda s: s["name"],
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tool_specs, st.integers(1, 4))
def test_fuzz_grammar_generation_over_random_schemas(specs: list[dict[str, Any]], steps: int) -> None:
    try:
        tools = [Tool.from_openai(s) for s in specs]
    except ToolDefinitionError:
        return
    grammar = plan_grammar(tools, options=GrammarOptions(max_steps=steps))
    check_gbnf(grammar)  # plan_grammar checks too; a failure here is a generator bug


@pytest.mark.slow
def test_llama_cpp_accepts_generated_grammars(tmp_path: Path, smollm2_path: Path) -> None:
    """Load many generated grammars into real llama.cpp in a subprocess (a bad grammar would crash it)."""
    import random

    rng = random.Random(7)
    leaves: list[dict[str, Any]] = [
        {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
        {"type": "string", "enum": ["x", "y z"]}, {"type": "array", "items": {"type": "string"}}, {},
        {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]}, {"type": ["string", "null"]},
    ]
    grammars = []
    for i in range(25):
        specs = []
        for j in range(rng.randint(1, 4)):
            props = {f"p{k}": rng.choice(leaves) for k in range(rng.randint(0, 4))}
            specs.append({"name": f"tool_{i}_{j}", "parameters": {"type": "object", "properties": props,
                                                                 "required": list(props)[: rng.randint(0, 4)]}})
        grammars.append(plan_grammar([Tool.from_openai(s) for s in specs], options=GrammarOptions(max_steps=4)))
    (tmp_path / "grammars.json").write_text(json.dumps(grammars))
    script = textwrap.dedent(f"""
        import json, llama_cpp
        from tinyagent.models import new_llama
        llm = new_llama(model_path={str(smollm2_path)!r}, n_ctx=512, n_threads=2, verbose=False)
        texts = []
        for g in json.load(open({str(tmp_path / "grammars.json")!r})):
            out = llm.create_completion("Plan:\\n", grammar=llama_cpp.LlamaGrammar.from_string(g, verbose=False),
                                        max_tokens=24, temperature=0.0)
            texts.append(out["choices"][0]["text"])
        print(json.dumps(texts))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    texts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(texts) == 25
    assert all(t.startswith("1. ") for t in texts), texts


def _accepts(grammar: str, text: str) -> bool:
    """Whether the grammar (as the llguidance decoder compiles it) accepts ``text`` whole (byte tokens)."""
    llguidance = pytest.importorskip("llguidance")
    from llguidance.gbnf_to_lark import gbnf_to_lark
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer("byte"),
                                   llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(grammar)))
    data = list(text.encode())
    return matcher.try_consume_tokens(data) == len(data) and matcher.is_accepting()


@tool
def send_sms(phone_numbers: list[str], text: str) -> str:
    """Send a text message.

    Args:
        phone_numbers: the recipients' phone numbers.
        text: the message.
    """
    return "ok"


@tool
def get_phone_number(name: str) -> str:
    """Look up a contact's phone number."""
    return name


def test_identifier_parameters_take_only_written_identifiers_or_references() -> None:
    tools = [get_phone_number, send_sms]
    free = plan_grammar(tools)
    held = plan_grammar(tools, identifiers={"phone": ["555-0142"], "email": []})
    invented = '1. send_sms(phone_numbers=["555-0199"], text="hi")\n2. join()\n<END_OF_PLAN>'
    written = '1. send_sms(phone_numbers=["555-0142"], text="hi")\n2. join()\n<END_OF_PLAN>'
    looked_up = ('1. get_phone_number(name="Sid")\n2. send_sms(phone_numbers=[$1], text="hi")\n3. join()\n'
                 '<END_OF_PLAN>')
    assert _accepts(free, invented) and _accepts(free, written)
    assert not _accepts(held, invented)
    assert _accepts(held, written) and _accepts(held, looked_up)


def test_a_tool_whose_identifier_has_no_source_yet_waits_for_a_lookup() -> None:
    g = plan_grammar([get_phone_number, send_sms], identifiers={})
    assert "send-sms-1-call" not in g  # step 1: nothing to pass yet
    assert "send-sms-2-call" in g
    assert not _accepts(g, '1. send_sms(phone_numbers=["Sid"], text="hi")\n2. join()\n<END_OF_PLAN>')
    assert _accepts(g, '1. get_phone_number(name="Sid")\n2. send_sms(phone_numbers=[$1], text="hi")\n3. join()\n'
                       '<END_OF_PLAN>')
    only = plan_grammar([send_sms], identifiers={})
    assert _accepts(only, "1. join()\n<END_OF_PLAN>")  # no tool can run: the plan can only end
    check_gbnf(only)


def test_the_agent_setting_puts_the_requests_identifiers_in_the_plan_grammar() -> None:
    import datetime as dt

    from tinyagent import Agent, AgentSettings
    from tinyagent.models import ScriptedModel

    grammars = {}
    for on in (False, True):
        model = ScriptedModel(['1. send_sms(phone_numbers=["555-0142"], text="late")\n2. join()\n<END_OF_PLAN>'])
        agent = Agent(tools=[get_phone_number, send_sms], model=model,
                      settings=AgentSettings(identifier_grammar=on, no_tool_check="off"))
        agent.plan_sync("Text 555-0142 that I am running late", today=dt.date(2026, 12, 3))
        grammars[on] = str(model.requests[0].grammar)
    assert '"\\"555-0142\\""' in grammars[True] and "send-sms-1-call" in grammars[True]
    assert '"\\"555-0142\\""' not in grammars[False]


def test_a_required_tool_must_be_called_before_join() -> None:
    tools = [send_sms, get_phone_number]
    grammar = plan_grammar(tools, required={"send_sms"}, options=GrammarOptions(max_steps=3))
    lookup = '1. get_phone_number(name="Jo")\n'
    send = '2. send_sms(phone_numbers=[$1], text="hi")\n'
    assert _accepts(grammar, lookup + send + "3. join()\n<END_OF_PLAN>")
    assert not _accepts(grammar, lookup + "2. join()\n<END_OF_PLAN>")  # nothing sent yet
    assert not _accepts(grammar, "1. join()\n<END_OF_PLAN>")
    assert _accepts(grammar, '1. send_sms(phone_numbers=["555 0100"], text="hi")\n2. join()\n<END_OF_PLAN>')
    lookups = "".join(f'{k}. get_phone_number(name="Jo")\n' for k in (1, 2, 3))
    assert not _accepts(grammar, lookups + "4. join()\n<END_OF_PLAN>")  # the last call must be the required one
    assert plan_grammar(tools, required={"not_offered"}) == plan_grammar(tools)


def test_each_required_group_must_be_served_before_join() -> None:
    tools = [send_sms, get_phone_number]
    grammar = plan_grammar(tools, required=[{"send_sms"}, {"get_phone_number"}],
                           options=GrammarOptions(max_steps=3))
    lookup = '1. get_phone_number(name="Jo")\n'
    send = '2. send_sms(phone_numbers=[$1], text="hi")\n'
    assert _accepts(grammar, lookup + send + "3. join()\n<END_OF_PLAN>")
    assert not _accepts(grammar, lookup + "2. join()\n<END_OF_PLAN>")  # nothing sent yet
    assert not _accepts(grammar, '1. send_sms(phone_numbers=["555 0100"], text="hi")\n2. join()\n<END_OF_PLAN>')
    one_left = '1. send_sms(phone_numbers=["555 0100"], text="hi")\n2. send_sms(phone_numbers=["555 0100"], text="a")\n'
    assert not _accepts(grammar, one_left + '3. send_sms(phone_numbers=["1"], text="b")\n4. join()\n<END_OF_PLAN>')
