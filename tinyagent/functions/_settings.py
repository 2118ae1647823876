"""Settings of the built-in tools: where the data lives, the timezone, SMTP, maps, meetings and transports."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
import zoneinfo
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pydantic

from ..errors import ConfigurationError, MissingDependencyError
from ._paths import ConfinedFS

__all__ = ["FunctionsSettings", "MessageTransport", "OutboxTransport", "UrlOpener"]

UrlOpener = Callable[[str], object]


@runtime_checkable
class MessageTransport(Protocol):
    """Where ``send_message`` hands a text message.

    Attributes:
        outgoing: True when :meth:`send` makes the message leave the machine (SMS gateway, chat API …); the tool then
            asks the confirmation hook first. False for transports that only write locally.
    """

    outgoing: bool

    def send(self, recipients: Sequence[str], text: str) -> str:
        """Deliver ``text`` to ``recipients`` and return an id or path for the delivered message.

        Raises:
            Exception: any failure; the tool wraps it in :class:`~tinyagent.functions.DeliveryError`.
        """
        ...


class OutboxTransport:
    """The default transport: each message becomes a JSON file in an outbox folder, for another program to send.

    Writes go through the confined file access: a link in the folder that leads outside ``roots`` is refused.

    Args:
        folder: the outbox folder (created on first use).
        roots: the folders the outbox may lie in; default the folder itself.
    """

    outgoing = False

    def __init__(self, folder: Path, roots: Sequence[Path] = ()) -> None:
        self.folder = Path(folder)
        self.roots = tuple(roots) or (self.folder,)

    def send(self, recipients: Sequence[str], text: str) -> str:
        """Write ``{"to", "text", "created"}`` atomically to a new file and return its path."""
        now = dt.datetime.now(dt.UTC)
        path = self.folder / f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}.json"
        record = {"to": list(recipients), "text": text, "created": now.isoformat(timespec="seconds")}
        written = ConfinedFS(self.roots).write(path, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
        return str(written)

    def __repr__(self) -> str:
        return f"OutboxTransport({str(self.folder)!r})"


def _default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("tinyagent"))


class FunctionsSettings(pydantic.BaseModel):
    """Configuration of the built-in tools. Unknown fields are refused.

    Attributes:
        data_dir: the user data folder holding contacts/, calendar/, mail/, notes/, files/ and messages/;
            defaults to the platform's user data dir for "tinyagent".
        roots: extra folders ``find_file``, ``read_file`` and attachments may use (besides ``data_dir``).
        timezone: an IANA zone name for event times; None means the machine's local zone (via tzlocal).
        smtp_host: the SMTP server; None means email stays in the outbox (nothing leaves the machine).
        smtp_port: the SMTP port.
        smtp_user: the login, if the server needs one.
        smtp_password_env: the environment variable holding the SMTP password (never stored in settings).
        smtp_starttls: upgrade the connection with STARTTLS before logging in.
        smtp_timeout_s: seconds before an SMTP connection attempt fails.
        sender: the From address of composed mail.
        map_directions_url: template with ``{origin}``, ``{destination}`` and ``{mode}`` (URL-encoded for you).
        map_search_url: template with ``{query}``, for showing one place.
        map_modes: travel modes the planner may name, mapped to the provider's value for ``{mode}``.
        meeting_url_template: template with ``{slug}`` (from the title) and ``{id}`` (random).
        message_transport: where ``send_message`` delivers; None means an :class:`OutboxTransport` under data_dir.
        url_opener: called with each map or meeting URL a tool makes (e.g. ``webbrowser.open``); None opens nothing.
        summary_input_chars: the most characters of a document sent to the model by ``summarize_file``.
        read_max_chars: the most characters ``read_file`` returns.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    data_dir: Path = pydantic.Field(default_factory=_default_data_dir)
    roots: tuple[Path, ...] = ()
    timezone: str | None = None
    smtp_host: str | None = None
    smtp_port: int = pydantic.Field(587, ge=1, le=65535)
    smtp_user: str | None = None
    smtp_password_env: str = "TINYAGENT_SMTP_PASSWORD"
    smtp_starttls: bool = True
    smtp_timeout_s: float = pydantic.Field(10.0, gt=0)
    sender: str = "me@localhost"
    map_directions_url: str = (
        "https://www.openstreetmap.org/directions?engine=fossgis_osrm_{mode}&from={origin}&to={destination}"
    )
    map_search_url: str = "https://www.openstreetmap.org/search?query={query}"
    map_modes: dict[str, str] = pydantic.Field(
        default_factory=lambda: {"driving": "car", "walking": "foot", "cycling": "bike"}
    )
    meeting_url_template: str = "https://meet.jit.si/{slug}-{id}"
    message_transport: MessageTransport | None = None
    url_opener: UrlOpener | None = None
    summary_input_chars: int = pydantic.Field(6000, ge=200)
    read_max_chars: int = pydantic.Field(8000, ge=200)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ConfigurationError(f"invalid FunctionsSettings: {exc}") from exc

    @pydantic.field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                zoneinfo.ZoneInfo(value)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown timezone {value!r}; use an IANA name such as 'Europe/Berlin'") from exc
        return value

    @pydantic.field_validator("sender")
    @classmethod
    def _check_sender(cls, value: str) -> str:
        if not re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", value.strip()):
            raise ValueError(f"sender {value!r} is not an email address")
        return value.strip()

    @pydantic.field_validator("meeting_url_template", "map_search_url", "map_directions_url")
    @classmethod
    def _check_template(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError(f"URL template {value!r} must start with https:// or http://")
        return value

    # -- derived locations -------------------------------------------------------------------------------------
    @property
    def tz(self) -> dt.tzinfo:
        """The timezone event times are interpreted in.

        Raises:
            MissingDependencyError: no zone is configured and tzlocal is not installed.
        """
        if self.timezone is not None:
            return zoneinfo.ZoneInfo(self.timezone)
        try:
            import tzlocal
        except ImportError as exc:
            raise MissingDependencyError("tzlocal", "functions") from exc
        name = tzlocal.get_localzone_name()
        return zoneinfo.ZoneInfo(name) if name else dt.UTC

    @property
    def allowed_roots(self) -> list[Path]:
        """Every folder a tool may read or write: ``data_dir`` first, then ``roots``."""
        return [self.data_dir, *self.roots]

    @property
    def file_roots(self) -> list[Path]:
        """The folders ``find_file`` searches: ``data_dir/files`` and ``roots``."""
        return [self.data_dir / "files", *self.roots]

    @property
    def contacts_dir(self) -> Path:
        """vCard files (``*.vcf``)."""
        return self.data_dir / "contacts"

    @property
    def calendar_path(self) -> Path:
        """The ICS store for events (VEVENT) and reminders (VTODO)."""
        return self.data_dir / "calendar" / "calendar.ics"

    @property
    def mail_dir(self) -> Path:
        """``inbox/``, ``outbox/`` and ``sent/`` folders of ``.eml`` files."""
        return self.data_dir / "mail"

    @property
    def notes_dir(self) -> Path:
        """Markdown notes, in sub-folders."""
        return self.data_dir / "notes"

    @property
    def trash_dir(self) -> Path:
        """Where deleted notes go."""
        return self.data_dir / "trash"

    def transport(self) -> MessageTransport:
        """The configured message transport, or the default outbox under ``data_dir/messages/outbox``."""
        if self.message_transport is not None:
            return self.message_transport
        return OutboxTransport(self.data_dir / "messages" / "outbox", roots=[self.data_dir])
