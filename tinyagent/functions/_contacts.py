"""A vCard address book (a folder of ``.vcf`` files) with fuzzy name lookup.

The reader understands vCard 3.0 and 4.0 as written by common address books (folded lines, ``item1.`` groups,
escaped values, ``TYPE=pref``); the writer emits vCard 3.0, which every major address book imports.
Lookup tolerates diacritics (``Jose`` finds ``José``), nicknames (``Bob`` finds ``Robert``) and typos, and refuses
to guess between equally good matches.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._text import strip_accents
from ..errors import MissingDependencyError, PathEscapeError
from ._errors import AmbiguousContact, ContactNotFound, ItemNotFound
from ._paths import ConfinedFS, safe_filename

__all__ = ["Contact", "ContactBook", "normalize_name", "parse_vcards", "to_vcard"]

# Common English nicknames, both directions are derived from this table.
_NICKNAMES: dict[str, tuple[str, ...]] = {
    "alexander": ("alex", "al", "xander", "sasha"), "alexandra": ("alex", "sandra", "lexi", "sasha"),
    "robert": ("bob", "bobby", "rob", "robbie"), "william": ("bill", "billy", "will", "liam"),
    "elizabeth": ("liz", "lizzie", "beth", "betty", "eliza"), "katherine": ("kate", "katie", "kathy", "kat"),
    "catherine": ("cathy", "cat", "kate"), "michael": ("mike", "mikey", "mick"), "richard": ("rick", "dick", "rich"),
    "james": ("jim", "jimmy", "jamie"), "john": ("johnny", "jack"), "jonathan": ("jon", "jonny"),
    "thomas": ("tom", "tommy"), "christopher": ("chris", "topher"), "christine": ("chris", "chrissy", "tina"),
    "daniel": ("dan", "danny"), "david": ("dave", "davey"), "joseph": ("joe", "joey"), "jose": ("pepe",),
    "margaret": ("maggie", "meg", "peggy"), "jennifer": ("jen", "jenny"), "patricia": ("pat", "patty", "trish"),
    "samuel": ("sam", "sammy"), "samantha": ("sam", "sammy"), "benjamin": ("ben", "benny"),
    "nicholas": ("nick", "nicky"), "anthony": ("tony",), "edward": ("ed", "eddie", "ted"),
    "siddharth": ("sid", "siddhu"), "matthew": ("matt",), "andrew": ("andy", "drew"), "steven": ("steve",),
    "stephen": ("steve",), "susan": ("sue", "suzy"), "rebecca": ("becky", "becca"), "victoria": ("vicky", "tori"),
    "zoe": ("zo",), "priya": ("pri",), "gabriel": ("gabe",), "gabriela": ("gabi", "gaby"), "timothy": ("tim",),
}
_NICK_TO_FULL: dict[str, set[str]] = {}
for _full, _nicks in _NICKNAMES.items():
    for _nick in _nicks:
        _NICK_TO_FULL.setdefault(_nick, set()).add(_full)

_MATCH = 80.0  # a candidate must score at least this
_TIE = 6.0  # candidates within this many points of the best are "equally good"
_SUGGEST = 50.0


def normalize_name(text: str) -> str:
    """Lower-case, strip diacritics and punctuation, collapse spaces (``"José Álvarez"`` -> ``"jose alvarez"``)."""
    stripped = strip_accents(text).replace("ß", "ss").replace("ø", "o").replace("æ", "ae").replace("ł", "l")
    cleaned = re.sub(r"[^\w\s]|_", " ", stripped.casefold())
    return " ".join(cleaned.split())


@dataclass
class Contact:
    """One address-book entry.

    Attributes:
        full_name: the display name (vCard ``FN``).
        given: given name (from ``N``, else the first word of ``FN``).
        family: family name (from ``N``, else the last word of ``FN``).
        nicknames: vCard ``NICKNAME`` values.
        emails: addresses, preferred first.
        phones: numbers, preferred first.
        org: organisation, if any.
        uid: the vCard ``UID``.
        source: the file the entry was read from.
    """

    full_name: str
    given: str = ""
    family: str = ""
    nicknames: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)
    org: str = ""
    uid: str = ""
    source: Path | None = None

    def variants(self) -> set[str]:
        """Every normalised way to refer to this contact: full name, parts, nicknames, nickname + family name."""
        full = normalize_name(self.full_name)
        given = normalize_name(self.given) or (full.split()[0] if full else "")
        family = normalize_name(self.family) or (full.split()[-1] if len(full.split()) > 1 else "")
        out = {full, given, family, f"{given} {family}".strip()}
        firsts = {given} | {normalize_name(n) for n in self.nicknames} | set(_NICKNAMES.get(given, ()))
        firsts |= _NICK_TO_FULL.get(given, set())
        for first in firsts:
            out.add(first)
            if family:
                out.add(f"{first} {family}")
        return {v for v in out if v}


# -- vCard text ------------------------------------------------------------------------------------------------
def _unfold(text: str) -> list[str]:
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] += raw[1:]
        elif raw.strip():
            lines.append(raw)
    return lines


def _unescape(value: str) -> str:
    return re.sub(r"\\([\\;,nN])", lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def _split_unescaped(value: str, sep: str) -> list[str]:
    return [_unescape(p) for p in re.split(rf"(?<!\\){re.escape(sep)}", value)]


def parse_vcards(text: str, source: Path | None = None) -> list[Contact]:
    """Parse every ``BEGIN:VCARD … END:VCARD`` block in ``text`` (vCard 2.1/3.0/4.0, leniently)."""
    contacts: list[Contact] = []
    current: Contact | None = None
    prefs: dict[str, list[tuple[bool, str]]] = {}
    for line in _unfold(text):
        if ":" not in line:
            continue
        head, value = line.split(":", 1)
        parts = head.split(";")
        name = parts[0].split(".")[-1].upper()  # drop "item1." groups
        params = ";".join(parts[1:]).lower()
        if name == "BEGIN" and value.strip().upper() == "VCARD":
            current, prefs = Contact(full_name=""), {"EMAIL": [], "TEL": []}
        elif name == "END" and value.strip().upper() == "VCARD" and current is not None:
            current.emails = [v for _, v in sorted(prefs["EMAIL"], key=lambda p: not p[0])]
            current.phones = [v for _, v in sorted(prefs["TEL"], key=lambda p: not p[0])]
            if not current.full_name:
                current.full_name = " ".join(p for p in (current.given, current.family) if p)
            if current.full_name:
                contacts.append(current)
            current = None
        elif current is None:
            continue
        elif name == "FN":
            current.full_name = _unescape(value).strip()
        elif name == "N":
            fields = _split_unescaped(value, ";") + ["", ""]
            current.family, current.given = fields[0].strip(), fields[1].strip()
        elif name == "NICKNAME":
            current.nicknames.extend(n.strip() for n in _split_unescaped(value, ",") if n.strip())
        elif name in ("EMAIL", "TEL"):
            val = _unescape(value).strip()
            if name == "TEL" and val.lower().startswith("tel:"):
                val = val[4:]
            if val:
                prefs[name].append(("pref" in params, val))
        elif name == "ORG":
            current.org = _split_unescaped(value, ";")[0].strip()
        elif name == "UID":
            current.uid = value.strip()
    for c in contacts:
        c.source = source
    return contacts


def to_vcard(contact: Contact) -> str:
    """The contact as a vCard 3.0 block (CRLF line endings)."""
    full = contact.full_name.strip()
    given = contact.given or (full.split()[0] if full else "")
    family = contact.family or (full.split()[-1] if len(full.split()) > 1 else "")
    lines = ["BEGIN:VCARD", "VERSION:3.0", f"UID:{contact.uid or uuid.uuid4()}", f"FN:{_escape(full)}",
             f"N:{_escape(family)};{_escape(given)};;;"]
    if contact.nicknames:
        lines.append("NICKNAME:" + ",".join(_escape(n) for n in contact.nicknames))
    if contact.org:
        lines.append(f"ORG:{_escape(contact.org)}")
    for i, email in enumerate(contact.emails):
        lines.append(f"EMAIL;TYPE=INTERNET{',PREF' if i == 0 else ''}:{email}")
    for i, phone in enumerate(contact.phones):
        lines.append(f"TEL;TYPE=CELL{',PREF' if i == 0 else ''}:{phone}")
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


class ContactBook:
    """The ``*.vcf`` files of one folder, read fresh on every lookup so edits by other programs are seen.

    Args:
        folder: the folder.
        roots: the folders a contact file (or a link to one) may lie in; default the folder itself.
    """

    def __init__(self, folder: Path, roots: Sequence[Path] = ()) -> None:
        self.folder = Path(folder)
        self.fs = ConfinedFS(roots or [self.folder])

    def contacts(self) -> list[Contact]:
        """Every contact in the folder, in file-name order (links that point outside it are skipped)."""
        out: list[Contact] = []
        for path in self.fs.files(self.folder, ".vcf"):
            try:
                text = self.fs.read_text(path)
            except (PathEscapeError, ItemNotFound):  # swapped for a link or removed since the listing
                continue
            out.extend(parse_vcards(text, source=path))
        return out

    def add(self, contact: Contact) -> Path:
        """Write ``contact`` to its own ``.vcf`` file (atomically, replacing one of the same name); return the path."""
        if not contact.uid:
            contact.uid = str(uuid.uuid4())
        path = self.folder / f"{safe_filename(contact.full_name, 'name')}.vcf"
        with self.fs.lock(self.folder):
            return self.fs.write(path, to_vcard(contact))

    def find(self, query: str, tool: str = "") -> Contact:
        """The one contact ``query`` names.

        Raises:
            ContactNotFound: nothing scores high enough (the closest names are in the message).
            AmbiguousContact: several contacts match about equally well (all of them are in the message).
        """
        return match_contact(query, self.contacts(), tool=tool)


def match_contact(query: str, contacts: Sequence[Contact], tool: str = "") -> Contact:
    """Pick the contact ``query`` names out of ``contacts`` (see :meth:`ContactBook.find`)."""
    try:
        from rapidfuzz import fuzz
    except ImportError as exc:
        raise MissingDependencyError("rapidfuzz", "functions") from exc
    q = normalize_name(query)
    if not q:
        raise ContactNotFound(query, _closest(contacts, []), tool=tool)
    scored: list[tuple[float, Contact]] = []
    for c in contacts:
        best = 0.0
        for v in c.variants():
            if v == q:
                best = 100.0
                break
            best = max(best, float(fuzz.ratio(q, v)), float(fuzz.token_sort_ratio(q, v)) - 2.0)
        if normalize_name(c.full_name) == q:
            best = 101.0  # an exact full name beats a nickname collision
        scored.append((best, c))
    scored.sort(key=lambda p: -p[0])
    if not scored or scored[0][0] < _MATCH:
        raise ContactNotFound(query, _closest(contacts, scored), tool=tool)
    top = scored[0][0]
    tied = [c for s, c in scored if s >= _MATCH and s >= top - _TIE]
    if len(tied) > 1:
        raise AmbiguousContact(query, [_label(c) for c in tied], tool=tool)
    return tied[0]


def _label(c: Contact) -> str:
    extra = c.emails[0] if c.emails else (c.phones[0] if c.phones else "")
    return f"{c.full_name} <{extra}>" if extra else c.full_name


def _closest(contacts: Iterable[Contact], scored: Sequence[tuple[float, Contact]]) -> list[str]:
    return [c.full_name for s, c in scored[:3] if s >= _SUGGEST]
