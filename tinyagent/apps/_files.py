"""Reading and writing the apps' files: text in any Unicode encoding with a byte-order mark, output folders made."""

from __future__ import annotations

import codecs
from pathlib import Path

from ..errors import ConfigurationError

__all__ = ["read_text", "writable"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def read_text(path: Path) -> str:
    """The text of ``path``: UTF-8, or UTF-8/UTF-16/UTF-32 with a byte-order mark.

    Raises:
        ConfigurationError: the file cannot be read or is not text in one of those encodings.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from exc
    encoding = next((enc for bom, enc in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not {encoding.upper()} text (undecodable byte at offset {exc.start}); "
                                 "save it as UTF-8") from exc


def writable(path: Path) -> Path:
    """``path`` with its parent folders created.

    Raises:
        ConfigurationError: the folder cannot be created.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"cannot create the folder {path.parent} for {path}: {exc.strerror or exc}") from exc
    return path
