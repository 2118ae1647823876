"""BFCL's AST checker rules for Python single-turn categories, re-implemented.

This follows ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` (bfcl-eval 2026.3.23, Apache-2.0) rule by rule,
including its quirks, so that our numbers are comparable with the leaderboard's:

* a call matches when the function name is exactly the expected one, every required parameter is present, no
  parameter is outside both the schema and the possible answer, and every omitted parameter's possible answers
  contain ``""`` (BFCL's mark for "may be omitted");
* each value is type-checked against the schema's Python type (``integer`` is ``int`` and not ``bool``; an ``int``
  is accepted where ``float`` is expected; ``any`` means a string), with one level of checking inside lists; a value
  whose type matches the possible answer's type instead is accepted as a "variable" and compared as it is;
* strings are compared after dropping spaces and ``,./-_*^``, lowercasing, and turning ``'`` into ``"``; the same
  goes for strings inside lists and dicts;
* dicts are compared key by key against each possible dict; a list of dicts in order;
* ``parallel`` categories match calls in any order (greedily, in the order of the expected calls, as BFCL does),
  ``multiple`` categories need exactly the one expected call among several offered functions.

A failure is reported as ``"<error_type>: <what was wrong>"``, with BFCL's error-type names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["check_calls", "check_single_call", "standardize_string"]

# BFCL's mapping from the schema's type names to the Python type a decoded value must have.
_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
    # Not in BFCL's Python data, but used by OpenAI-style specs; mapped the way BFCL would have.
    "number": float,
    "object": dict,
}
_NESTED_TYPES = ("array", "tuple")
_STRIP = re.compile(r"[ ,./\-_*^]")

Answers = list[Any]
"""The possible values of one parameter; ``""`` among them means the parameter may be omitted."""


def standardize_string(text: str) -> str:
    """Normalise a string the way BFCL does before comparing it.

    Spaces and ``,./-_*^`` are dropped, letters lowercased and single quotes turned into double quotes, so
    "April 1, 2024" and "april 1 2024" compare equal.
    """
    return _STRIP.sub("", text).lower().replace("'", '"')


def _answer_type(answers: Answers) -> type | None:
    """The type of the first possible answer that is not the "may be omitted" mark."""
    for answer in answers:
        if answer != "":
            return type(answer)
    return None


def _type_check(
    param: str,
    value: Any,
    answers: Answers,
    type_name: str,
    expected: type,
    nested: type | None,
    nested_name: str,
) -> tuple[str | None, bool]:
    """Check ``value``'s type; return ``(error or None, is_variable)``.

    ``is_variable`` is BFCL's notion of a value whose possible answers have a different type than the schema
    says (the answer names a variable): such values skip the string/list/dict normalisation.
    """
    answer_type = _answer_type(answers)
    is_variable = answer_type is not None and answer_type is not expected
    nested_error: str | None = None
    if type(value) is expected:
        elements = cast(list[Any], value)
        if nested is None:
            return None, is_variable
        for answer in answers:
            # Every element must match the inner type of at least one possible list; a non-list answer
            # (the "" mark) is not checked, as in BFCL.
            if type(answer) is list:
                items_ok = all(
                    _type_check(param, item, answer, nested_name, nested, None, "")[0] is None for item in elements
                )
                if not items_ok:
                    continue
            return None, is_variable
        nested_error = (
            f"type_error:nested: parameter {param!r} should be a {type_name} of {nested_name}, got {value!r}"
        )
    if answer_type is not None and type(value) is answer_type:
        if nested_error is not None:
            return nested_error, True
        return None, True
    if nested_error is not None:
        return nested_error, False
    return (
        f"type_error:simple: parameter {param!r} should be of type {type_name}, "
        f"got {type(value).__name__} {value!r}",
        False,
    )


def _standardize_items(values: Sequence[Any]) -> list[Any]:
    return [standardize_string(v) if type(v) is str else v for v in values]


def _check_string(param: str, value: str, answers: Answers) -> str | None:
    wanted = [standardize_string(a) for a in answers if type(a) is str]
    if standardize_string(value) not in wanted:
        return f"value_error:string: parameter {param!r} is {value!r}; expected one of {answers!r} (case-insensitive)"
    return None


def _check_list(param: str, value: list[Any], answers: Answers) -> str | None:
    got = _standardize_items(value)
    wanted = []
    for answer in answers:
        # BFCL iterates over each possible answer by index; the "" mark thus becomes the empty list.
        if isinstance(answer, list | tuple | str):
            wanted.append(_standardize_items(list(answer)))
    if got not in wanted:
        return f"value_error:list/tuple: parameter {param!r} is {value!r}; expected one of {answers!r}"
    return None


def _check_dict(param: str, value: Mapping[str, Any], answers: Answers) -> str | None:
    # Validity follows BFCL; as the reason, the first possible answer's mismatch is the most telling.
    error: str | None = None
    for answer in answers:
        if answer == "":
            continue
        if not isinstance(answer, Mapping):
            error = error or f"value_error:dict_value: parameter {param!r}: possible answer {answer!r} is not a dict"
            continue
        failure = None
        for key, item in value.items():
            if key not in answer:
                failure = f"value_error:dict_key: parameter {param!r} has unexpected key {key!r}"
                break
            candidates = answer[key] if isinstance(answer[key], list) else [answer[key]]
            got = standardize_string(item) if type(item) is str else item
            if got not in _standardize_items(candidates):
                failure = f"value_error:dict_value: {param}[{key!r}] is {item!r}; expected one of {candidates!r}"
                break
        if failure is None:
            for key, candidates in answer.items():
                if key not in value and "" not in candidates:
                    failure = f"value_error:dict_key: parameter {param!r} is missing key {key!r}"
                    break
        if failure is None:
            return None
        error = error or failure
    return error or f"dict_checker:unclear: parameter {param!r} is {value!r}; expected one of {answers!r}"


def _check_list_of_dicts(param: str, value: list[Any], answers: Answers) -> str | None:
    error: str | None = None
    for answer in answers:
        expected = answer if isinstance(answer, list) else []
        if len(value) != len(expected):
            error = error or (
                f"value_error:list_dict_count: parameter {param!r} has {len(value)} dicts, expected {len(expected)}"
            )
            continue
        failure = None
        for item, wanted in zip(value, expected, strict=True):
            if not isinstance(item, Mapping):
                failure = f"type_error:nested: parameter {param!r} holds {item!r}, not a dict"
                break
            failure = _check_dict(param, item, [wanted])
            if failure is not None:
                break
        if failure is None:
            return None
        error = error or failure
    return error or f"list_dict_checker:unclear: parameter {param!r} is {value!r}; expected one of {answers!r}"


def check_single_call(
    description: Mapping[str, Any], name: str, args: Mapping[str, Any], expected: Mapping[str, Answers]
) -> str | None:
    """Check one predicted call against one expected call; return None when it matches, else the reason.

    Args:
        description: the BFCL function description of the expected function.
        name: the predicted function name.
        args: the predicted arguments.
        expected: the possible answers per parameter (``{param: [value, ...]}``).
    """
    func_name = str(description.get("name", ""))
    if name != func_name:
        return f"simple_function_checker:wrong_func_name: expected {func_name!r}, got {name!r}"
    parameters = description.get("parameters") or {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    for param in parameters.get("required") or []:
        if param not in args:
            return f"simple_function_checker:missing_required: missing required parameter {param!r}"
    for param, raw_value in args.items():
        if param not in properties or param not in expected:
            return f"simple_function_checker:unexpected_param: unexpected parameter {param!r}"
        value = raw_value
        answers = expected[param]
        spec = properties[param] if isinstance(properties[param], Mapping) else {}
        type_name = str(spec.get("type", ""))
        expected_type = _PYTHON_TYPES.get(type_name)
        nested_type: type | None = None
        nested_name = ""
        if type_name in _NESTED_TYPES:
            items = spec.get("items")
            nested_name = str(items.get("type", "")) if isinstance(items, Mapping) else ""
            nested_type = _PYTHON_TYPES.get(nested_name)
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name in ("float", "number") and type(value) is int:
            value = float(value)  # BFCL allows Python's int-to-float promotion
        is_variable = False
        if expected_type is not None:
            error, is_variable = _type_check(
                param, value, answers, type_name, expected_type, nested_type, nested_name
            )
            if error is not None:
                return error
        # A "variable" answer is compared as it is; otherwise strings, lists and dicts are normalised first.
        if not is_variable and expected_type in (dict, list, str):
            if expected_type is dict:
                error = _check_dict(param, value, answers)
            elif nested_type is dict:
                error = _check_list_of_dicts(param, value, answers)
            elif expected_type is str:
                error = _check_string(param, value, answers)
            else:
                error = _check_list(param, value, answers)
            if error is not None:
                return error
            continue
        if value not in answers:
            return f"value_error:others: parameter {param!r} is {value!r}; expected one of {answers!r}"
    for param, answers in expected.items():
        if param not in args and "" not in answers:
            return f"simple_function_checker:missing_optional: parameter {param!r} was left out but is not optional"
    return None


def _find_description(functions: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    for function in functions:
        if function.get("name") == name:
            return function
    return None


def check_calls(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    ground_truth: Sequence[Mapping[str, Mapping[str, Answers]]],
) -> str | None:
    """Check the predicted calls of a non-irrelevance case; return None when they are right, else the reason.

    Args:
        category: the BFCL category (``"parallel"`` in it means unordered calls, ``"multiple"`` one call among many).
        functions: the case's function descriptions.
        calls: the predicted ``(name, args)`` pairs, in order.
        ground_truth: BFCL's possible answers, one ``{name: {param: [values]}}`` per expected call.
    """
    if "parallel" in category:
        if len(calls) != len(ground_truth):
            return (
                f"parallel_function_checker_no_order:wrong_count: expected {len(ground_truth)} calls, "
                f"got {len(calls)}"
            )
        matched: set[int] = set()
        for position, expected_call in enumerate(ground_truth):
            name, expected = next(iter(expected_call.items()))
            description = _find_description(functions, name)
            if description is None:
                return f"ground_truth_error: expected function {name!r} is not among the case's functions"
            reasons = []
            for index, (call_name, call_args) in enumerate(calls):
                if index in matched:
                    continue
                reason = check_single_call(description, call_name, call_args, expected)
                if reason is None:
                    matched.add(index)
                    break
                reasons.append(f"call {index}: {reason}")
            else:
                return (
                    f"parallel_function_checker_no_order:cannot_find_match: no predicted call matches expected call "
                    f"{position} ({name}); " + "; ".join(reasons)
                )
        return None
    if "multiple" in category:
        if len(calls) != len(ground_truth):
            return f"multiple_function_checker:wrong_count: expected {len(ground_truth)} call, got {len(calls)}"
        name, expected = next(iter(ground_truth[0].items()))
        description = _find_description(functions, name)
        if description is None:
            return f"ground_truth_error: expected function {name!r} is not among the case's functions"
        return check_single_call(description, calls[0][0], calls[0][1], expected)
    if len(calls) != 1:
        return f"simple_function_checker:wrong_count: expected 1 call, got {len(calls)}"
    # BFCL checks a simple case against the first (only) function description.
    _, expected = next(iter(ground_truth[0].items()))
    return check_single_call(functions[0], calls[0][0], calls[0][1], expected)
