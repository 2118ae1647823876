"""The shape a string parameter's schema or description asks its values to have, as a grammar expression.

Small planners read "in the format of 'City, State'" and still write ``"Tel Aviv"``; they read "the recipients'
email addresses" and still write ``"Sid"``. Where a description states a shape plainly, the plan grammar holds the
planner to it (a ``$k`` reference stays allowed wherever it was):

* a date or time pattern, quoted or not: ``'YYYY-MM-DD'``, ``MM/DD/YYYY``, ``'YYYY-MM-DD HH:mm:ss'``, ``HH:MM``;
* a quoted example of digits after the word "format": "in 24-hour format (e.g., '18:30')";
* a quoted placeholder pattern after the word "format": "in the format of 'City, State'" (the separators must
  appear, each part is free text);
* JSON schema ``format: date`` / ``email``, or a description that asks for email addresses or phone numbers (and
  not for a name): the value must look like one.

An empty value stays allowed where the description speaks of one ("empty for none"), so do the schema's default
and the lowercase sentinels a description offers beside the shape ("or 'null' for immediate availability", "'dontcare'
if no preference") stay allowed. Everything is read from the schema and description, never from a tool's or a
parameter's name; a description that states no shape leaves the value free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._grounding import DATE_LIKE, identifiers

__all__ = ["DATE_FIELD", "DATE_PATTERN", "MERIDIEM", "NAME_WORDS", "affirmed", "date_patterns", "described_kind",
           "identifier_kind", "string_shapes", "with_identifier_formats", "written_identifiers"]

DATE_FIELD = r"(?:YYYY|YY|MM|DD|HH|hh|mm|SS|ss)"
"""A field of a documented date or time pattern."""
# A 12-hour clock's marker after the fields ("hh:mm AM/PM"): it is part of the pattern, not text after it.
MERIDIEM = r"(?:AM/PM|am/pm|AM|PM|am|pm)"
DATE_PATTERN = re.compile(rf"(?<![A-Za-z]){DATE_FIELD}(?:(?:[-/.:T]| T |\s)?{DATE_FIELD})+(?: ?{MERIDIEM})?"
                          r"(?![A-Za-z])")
_QUOTED = re.compile(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"|`([^`\n]{1,40})`|\u201c([^\u201d\n]{1,40})\u201d")
_FORMAT_BEFORE = re.compile(r"\b(?:format(?:ted)?|pattern)\b[^;'\"`\u201c]{0,24}$", re.IGNORECASE)
_TEMPLATE = re.compile(rf"(?:{DATE_FIELD}|{MERIDIEM}|[-/.:T, ]|\b(?:to|and|until|through)\b)+")
_DIGIT_EXAMPLE = re.compile(r"\d+(?:[-/.: ]\d+)+")
_PLACEHOLDER_PART = r"[A-Z][A-Za-z]*(?: [A-Za-z]+)*(?: \([A-Za-z]+\))?"
_PLACEHOLDER = re.compile(rf"{_PLACEHOLDER_PART}(?:(?:, | - |/| / |; ){_PLACEHOLDER_PART})+")
_SEPARATOR = re.compile(r", | - | / |/|; ")
_SENTINEL = re.compile(r"^[a-z][a-z_]{1,15}$")
_EMAIL_WORDS = re.compile(r"\be-?mail(?: address(?:es)?| ids?)\b", re.IGNORECASE)
_PHONE_WORDS = re.compile(r"\b(?:phone|mobile|cell|telephone) numbers?\b", re.IGNORECASE)
NAME_WORDS = re.compile(r"\b(?:names?|handles?|usernames?|contacts?|ids?)\b", re.IGNORECASE)
_EMPTY = re.compile(r"\bempty\b|\bblank\b|''|\"\"", re.IGNORECASE)
_FREE = r'[^"\\\x00-\x1f]'
# Bounded, and without the characters that end an argument list (",", "=", ")", ...): a planner that began an
# address with something else ("+447700900123,subject_line=...") must end it soon, not run to the token limit.
# No "$" either: a step's result is passed as a bare $k, and "$1$2$3..." inside an address is a planner looping.
_EMAIL = (r'[^"\\\x00-\x1f@ ,;:<>()\[\]=$]{1,64} "@" [^"\\\x00-\x1f@ ,;:<>()\[\]=$]{1,120} "." '
          r'[a-zA-Z0-9.-]{1,63}')
_PHONE = r'"+"? [0-9(] [0-9() .-]{5,20}'
_ISO_DATE = '[0-9]{4} "-" [0-9]{2} "-" [0-9]{2}'


def string_shapes(schema: Mapping[str, Any], description: str = "") -> list[str]:
    """GBNF expressions for the inside of a string value of ``schema`` (without the quotes); [] when its schema
    and description state no shape. Several expressions are alternatives."""
    text = " ".join(s for s in (description, str(schema.get("description", ""))) if s)
    fmt = str(schema.get("format", "")).lower()
    shapes: list[str] = []
    if fmt == "date":
        shapes.append(_ISO_DATE)
    elif fmt in ("email", "idn-email"):
        shapes.append(_EMAIL)
    elif fmt in ("phone", "tel"):
        shapes.append(_PHONE)
    covered = []
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None)
        if DATE_PATTERN.search(quoted) and _TEMPLATE.fullmatch(quoted):
            shapes.append(_date_shape(quoted))  # 'YYYY-MM-DD to YYYY-MM-DD' as a whole
            covered.append(range(match.start(), match.end()))
            continue
        if not _FORMAT_BEFORE.search(text[:match.start()]):
            continue
        if _DIGIT_EXAMPLE.fullmatch(quoted):
            shapes.append(_digit_shape(quoted))
        elif _PLACEHOLDER.fullmatch(quoted):
            shapes.append(_placeholder_shape(quoted))
    for written in DATE_PATTERN.finditer(text):
        if not any(written.start() in span for span in covered):
            shapes.append(_date_shape(written.group()))
    if not shapes and not NAME_WORDS.search(text):
        if _EMAIL_WORDS.search(text):
            shapes.append(_EMAIL)
        elif _PHONE_WORDS.search(text):
            shapes.append(_PHONE)
    if not shapes:
        return []
    default = schema.get("default")
    shapes += [_literal(s) for s in _sentinels(text) + ([default] if isinstance(default, str) else [])]
    if _EMPTY.search(text):
        shapes.append('""')
    return list(dict.fromkeys(shapes))


def date_patterns(schema: Mapping[str, Any], description: str = "") -> list[str]:
    """The date and time patterns a parameter's description (and its schema's) writes, in order:
    ``["YYYY-MM-DD HH:MM:SS", "YYYY-MM-DD"]`` for "formatted YYYY-MM-DD HH:MM:SS, or YYYY-MM-DD for an all-day
    task"."""
    text = " ".join(s for s in (description, str(schema.get("description", ""))) if s)
    return list(dict.fromkeys(m.group() for m in DATE_PATTERN.finditer(text)))


def identifier_kind(schema: Mapping[str, Any]) -> str | None:
    """``"email"`` or ``"phone"`` when a string parameter (or a list of strings, described as a whole) holds such
    identifiers by its schema or description; else None."""
    if schema.get("type") == "array":
        items = schema.get("items") or {}
        if items.get("type") != "string":
            return None
        schema = {**items, "description": items.get("description") or schema.get("description", "")}
    if schema.get("type") != "string":
        return None
    shapes = string_shapes(schema)
    return "email" if _EMAIL in shapes else "phone" if _PHONE in shapes else None


_TARGET_WORDS = re.compile(r"\b(?:address(?:es)?|recipients?)\b", re.IGNORECASE)
_TARGET_NAMES = frozenset({"to", "cc", "bcc", "recipient", "recipients"})
_MAIL_CONTEXT = re.compile(r"e-?mail|\bmail(?:box)?\b|\binbox\b", re.IGNORECASE)
_PHONE_CONTEXT = re.compile(r"\b(?:sms|text messages?|phone|mobile)\b", re.IGNORECASE)


def with_identifier_formats(parameters: Mapping[str, Any], description: str, name: str = "") -> dict[str, Any]:
    """``parameters`` with ``format`` (``"email"`` or ``"phone"``) added to each parameter that holds recipients
    of no stated kind, where the tool's name and description speak of one kind only.

    Vendors often say the kind once, for the tool ("Recipients must be real e-mail addresses"), and leave the
    parameter generic (``to: "Addresses for the To line."``, ``cc: "Addresses to copy."``). A parameter counts when
    it is a list of strings or is named like a recipient field (to, cc, bcc, recipients) and its own text speaks of
    addresses or recipients, not of names; one with a kind already is left as it is.
    """
    context = _spaced(f"{name} {description}").replace(".", " ")
    mail, phone = bool(_MAIL_CONTEXT.search(context)), bool(_PHONE_CONTEXT.search(context))
    props = parameters.get("properties")
    if mail == phone or not isinstance(props, Mapping):
        return dict(parameters)
    fmt = "email" if mail else "phone"
    out = {}
    for pname, schema in props.items():
        out[pname] = schema
        if not isinstance(schema, Mapping) or identifier_kind(schema) is not None:
            continue
        raw = schema.get("items") if schema.get("type") == "array" else None
        items: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        listed = items.get("type") == "string"
        if not listed and (schema.get("type") != "string" or pname.lower() not in _TARGET_NAMES):
            continue
        text = f"{_spaced(pname)} {schema.get('description', '')} {items.get('description', '') if listed else ''}"
        if NAME_WORDS.search(text) or not (_TARGET_WORDS.search(text) or pname.lower() in _TARGET_NAMES):
            continue
        out[pname] = {**schema, "items": {**items, "format": fmt}} if listed else {**schema, "format": fmt}
    return {**parameters, "properties": out}


def _spaced(text: str) -> str:
    """``text`` with camelCase and snake_case words apart ("recipientAddresses" → "recipient Addresses")."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).replace("_", " ")


_FINDS_EMAIL = re.compile(r"\be-?mail(?:\s+|-)?(?:address(?:es)?|ids?)\b", re.IGNORECASE)
_FINDS_PHONE = re.compile(r"\b(?:phone|mobile|cell|telephone)(?:\s+|-)?numbers?\b", re.IGNORECASE)


_DENIED = re.compile(
    r"\b(?:(?:does|do|will|can|should)\s*(?:not|n't)|never|cannot)\s+(?:return|give|provide|include|find|contain|"
    r"look|show|hand|list)\w*\b[^.;]*"  # "It does not return phone numbers; for those, use ..."
    r"|,?\s*\b(?:but\s+)?not\s+(?:the\s+|an?\s+|their\s+|its\s+)?"  # ", not the phone number"
    r"(?:e-?mail|phone|mobile|cell)[^.;,]*",
    re.IGNORECASE)


def affirmed(text: str) -> str:
    """``text`` without what it denies a tool does ("It does not return phone numbers", "the e-mail address, not
    the phone number"): a lookup's description often names the other kind only to send it elsewhere."""
    return _DENIED.sub(" ", text)


def described_kind(text: str) -> str | None:
    """The one identifier kind a tool's description speaks of (``"email"``: "returns the best match's e-mail
    address"; ``"phone"``: "returns the mobile number of a contact"); None for both or neither. Unlike a
    parameter's (:func:`identifier_kind`), a lookup's description names the person it is given ("search the
    contacts by name"), so names do not rule a kind out here."""
    text = affirmed(text)
    mail, phone = bool(_FINDS_EMAIL.search(text)), bool(_FINDS_PHONE.search(text))
    return None if mail == phone else "email" if mail else "phone"


_PHONE_LIKE = re.compile(r"(?<![\w+])\+?\(?\d[\d\s().-]{3,}\d(?![\w])")


def written_identifiers(text: str) -> dict[str, list[str]]:
    """The e-mail addresses and phone numbers ``text`` writes, as written: ``{"email": [...], "phone": [...]}``.

    Generous with phone numbers (any run of 5+ digits with phone separators that is not a date or a time), since an
    identifier missed here is one the plan grammar (``identifier_grammar``) would not let the planner write.
    """
    out: dict[str, list[str]] = {"email": [], "phone": []}
    for value in identifiers(text):
        if value.kind in out and value.value not in out[value.kind]:
            out[value.kind].append(value.value)
    for m in _PHONE_LIKE.finditer(text):
        run = m.group().strip().rstrip(".-(")
        if sum(c.isdigit() for c in run) >= 5 and not DATE_LIKE.fullmatch(run) and run not in out["phone"]:
            out["phone"].append(run)
    return out


def _date_shape(pattern: str) -> str:
    """``YYYY-MM-DD HH:mm`` (or ``YYYY-MM-DD to YYYY-MM-DD``, ``MM/DD/YYYY hh:mm AM/PM``) -> the digits each field
    can hold (a month 01-12, a day 01-31, an hour 00-23, minutes 00-59), the rest as written. A planner that starts
    a documented ``MM/DD/YYYY`` date the ISO way ("20...") is held to a month. On a 12-hour clock the hour may
    still be written 13-23 ("16:15 PM": a small planner's habit; the repairs write it "04:15 PM"), not forced to a
    wrong hour ("12:15 PM")."""
    parts: list[str] = []
    tokens = re.findall(rf"{DATE_FIELD}|{MERIDIEM}|.", pattern)
    for i, tok in enumerate(tokens):
        if re.fullmatch(MERIDIEM, tok):
            am, pm = ("am", "pm") if tok.islower() else ("AM", "PM")
            parts.append(f"({_literal(am)} | {_literal(pm)})")
        elif re.fullmatch(DATE_FIELD, tok):
            minutes = tok in ("MM", "mm") and i > 0 and tokens[i - 1] == ":"
            parts.append(_FIELD_DIGITS.get("min" if minutes else tok, f"[0-9]{{{len(tok)}}}"))
        else:
            parts.append(_literal(tok))
    return " ".join(parts)


_FIELD_DIGITS = {"YYYY": "[0-9]{4}", "MM": '("0" [1-9] | "1" [0-2])', "DD": '("0" [1-9] | [12] [0-9] | "3" [01])',
                 "HH": '([01] [0-9] | "2" [0-3])', "hh": '([01] [0-9] | "2" [0-3])',  # (on a 12-hour clock too)
                 "mm": "[0-5] [0-9]", "min": "[0-5] [0-9]", "SS": "[0-5] [0-9]", "ss": "[0-5] [0-9]"}


def _digit_shape(example: str) -> str:
    """``18:30`` -> two digits, ``:``, two digits (each run of digits keeps its width)."""
    parts = []
    for run in re.findall(r"\d+|\D", example):
        parts.append(f"[0-9]{{{len(run)}}}" if run.isdigit() else _literal(run))
    return " ".join(parts)


def _placeholder_shape(pattern: str) -> str:
    """``City, State`` -> free text, the separator, free text (a part may not hold a separator's mark)."""
    separators = _SEPARATOR.findall(pattern)
    marks = sorted({ch for sep in separators for ch in sep if ch != " "}, key=lambda ch: ch == "-")
    part = f"{_FREE[:-1]}{''.join(marks)}]+"
    items = [part]
    for sep in separators:
        items += [_literal(sep), part]
    return " ".join(items)


def _sentinels(text: str) -> list[str]:
    """Quoted lowercase words offered as special values ("or 'null'", "'dontcare' if ...")."""
    out = []
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None)
        if _SENTINEL.fullmatch(quoted):
            out.append(quoted)
    return out


def _literal(text: str) -> str:
    """``text`` as a GBNF literal of the characters inside a JSON string."""
    inner = json.dumps(text, ensure_ascii=False)[1:-1]
    return json.dumps(inner, ensure_ascii=False)
