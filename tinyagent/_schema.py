"""JSON-schema helpers: normalising dialects (OpenAI, BFCL) and validating plain JSON values.

Pydantic validates calls to Python tools. Tools known only by their schema (imported from OpenAI specs, BFCL or MCP)
are validated here, against the normalised schema, so that both kinds fail with the same typed error.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import SchemaValidationError, ToolDefinitionError

__all__ = ["inline_refs", "normalize_schema", "validate_value", "SchemaValidationError"]

# BFCL writes Python type names; map them onto JSON-schema types.
_TYPE_ALIASES = {
    "dict": "object",
    "float": "number",
    "double": "number",
    "int": "integer",
    "long": "integer",
    "tuple": "array",
    "list": "array",
    "str": "string",
    "bool": "boolean",
    "any": None,
    "none": "null",
}
_JSON_TYPES = {"object", "number", "integer", "array", "string", "boolean", "null"}
_DROP_KEYS = {"title", "$schema", "additionalProperties_", "examples"}




def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Return ``schema`` with every local ``$ref`` replaced by its definition (recursion is cut at depth 8)."""
    defs: dict[str, Any] = {**schema.get("$defs", {}), **schema.get("definitions", {})}

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in defs:
                    raise ToolDefinitionError(f"schema reference {ref!r} has no definition")
                if depth > 8:
                    return {}
                merged = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**defs[name], **merged}, depth + 1)
            return {k: walk(v, depth) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(v, depth) for v in node]
        return node

    result = walk(schema, 0)
    assert isinstance(result, dict)  # a dict walks to a dict
    return result


def normalize_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Normalise a parameter schema to plain JSON schema.

    Accepts OpenAI's dialect and BFCL's (``"dict"``, ``"float"``, ``"tuple"``, ``"any"``), inlines ``$ref``s,
    drops titles, and makes sure the top level is an object with ``properties`` and ``required``.

    Raises:
        ToolDefinitionError: the schema is not an object schema or names an unknown type.
    """
    if not schema:
        return {"type": "object", "properties": {}, "required": []}
    if not isinstance(schema, dict):
        raise ToolDefinitionError(f"a tool's parameters must be a JSON-schema object, got {type(schema).__name__}")
    node = _normalize_node(inline_refs(copy.deepcopy(schema)), "parameters")
    if node.get("type") not in ("object", None):
        raise ToolDefinitionError(f"a tool's parameters must have type 'object', got {node.get('type')!r}")
    node["type"] = "object"
    node.setdefault("properties", {})
    props = node["properties"]
    required = [r for r in node.get("required", []) if r in props]
    node["required"] = required
    return node


def _normalize_node(node: Any, path: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise ToolDefinitionError(f"{path}: a schema must be an object, got {node!r}")
    out: dict[str, Any] = {k: v for k, v in node.items() if k not in _DROP_KEYS}
    typ = out.get("type")
    if isinstance(typ, list):
        types: list[str | None] = [_map_type(t, path) for t in typ]
        non_null = [t for t in types if t not in (None, "null")]
        if len(non_null) == 1:
            out["type"] = non_null[0]
            out["nullable"] = "null" in types
        else:
            out.pop("type")
            out["anyOf"] = [{"type": t} for t in types if t]
    elif typ is not None:
        mapped = _map_type(typ, path)
        if mapped is None:
            out.pop("type")
        else:
            out["type"] = mapped
    for key in ("anyOf", "oneOf"):
        if key in out:
            variants: list[dict[str, Any]] = [_normalize_node(v, f"{path}.{key}") for v in out[key]]
            concrete = [v for v in variants if v.get("type") != "null"]
            if len(concrete) == 1 and len(variants) == 2:
                out.pop(key)
                out.update(concrete[0])
                out["nullable"] = True
            else:
                out[key] = variants
    if "properties" in out:
        if not isinstance(out["properties"], dict):
            raise ToolDefinitionError(f"{path}.properties must be an object")
        out["properties"] = {k: _normalize_node(v, f"{path}.{k}") for k, v in out["properties"].items()}
        out.setdefault("type", "object")
    if "items" in out:
        items = out["items"]
        if isinstance(items, list):  # tuple-style items
            out["items"] = _normalize_node(items[0], f"{path}[]") if items else {}
        else:
            out["items"] = _normalize_node(items, f"{path}[]")
        out.setdefault("type", "array")
    if out.get("type") == "array" and "items" not in out:
        out["items"] = {}
    if "enum" in out and not isinstance(out["enum"], list):
        raise ToolDefinitionError(f"{path}.enum must be a list")
    return out


def _map_type(typ: Any, path: str) -> str | None:
    if not isinstance(typ, str):
        raise ToolDefinitionError(f"{path}: type must be a string, got {typ!r}")
    low = typ.lower()
    if low in _JSON_TYPES:
        return low
    if low in _TYPE_ALIASES:
        return _TYPE_ALIASES[low]
    raise ToolDefinitionError(f"{path}: unknown type {typ!r}; use one of {sorted(_JSON_TYPES)}")


def validate_value(schema: dict[str, Any], value: Any, path: str = "") -> Any:
    """Validate ``value`` against a normalised schema and return it, lightly coerced.

    Coercions: an integer where a number is expected becomes a float; a whole float where an integer is expected
    becomes an int; a tuple becomes a list.

    Raises:
        SchemaValidationError: the value does not match.
    """
    if value is None and schema.get("nullable"):
        return None
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaValidationError(f"{value!r} is not one of {schema['enum']!r}", path)
    if "anyOf" in schema or "oneOf" in schema:
        errors = []
        for variant in schema.get("anyOf", schema.get("oneOf", [])):
            try:
                return validate_value(variant, value, path)
            except SchemaValidationError as exc:
                errors.append(str(exc))
        raise SchemaValidationError(f"{value!r} matches none of the allowed shapes ({'; '.join(errors)})", path)
    typ = schema.get("type")
    if typ is None:
        return value
    if typ == "string":
        if not isinstance(value, str):
            raise SchemaValidationError(f"expected a string, got {type(value).__name__} {value!r}", path)
        return value
    if typ == "boolean":
        if not isinstance(value, bool):
            raise SchemaValidationError(f"expected true or false, got {value!r}", path)
        return value
    if typ == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaValidationError(f"expected an integer, got {value!r}", path)
        if isinstance(value, float):
            if not value.is_integer():
                raise SchemaValidationError(f"expected an integer, got {value!r}", path)
            return int(value)
        return value
    if typ == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaValidationError(f"expected a number, got {value!r}", path)
        return value
    if typ == "null":
        if value is not None:
            raise SchemaValidationError(f"expected null, got {value!r}", path)
        return None
    if typ == "array":
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise SchemaValidationError(f"expected a list, got {type(value).__name__} {value!r}", path)
        items = schema.get("items") or {}
        return [validate_value(items, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if typ == "object":
        if not isinstance(value, dict):
            raise SchemaValidationError(f"expected an object, got {type(value).__name__} {value!r}", path)
        props: dict[str, Any] = schema.get("properties", {})
        missing = [r for r in schema.get("required", []) if r not in value]
        if missing:
            raise SchemaValidationError(f"missing required field(s) {missing}", path)
        out = {}
        for key, val in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                out[key] = validate_value(props[key], val, sub)
            elif props and schema.get("additionalProperties") is False:
                raise SchemaValidationError(f"unexpected field {key!r}; allowed: {sorted(props)}", sub)
            else:
                out[key] = val
        return out
    return value
