"""Links the user opens: map directions and video meeting links."""

from __future__ import annotations

import re
import urllib.parse
import uuid

from .._tools import Tool, tool
from ._binding import Binding
from ._errors import InvalidArgument

__all__ = ["tools"]


def get_directions_tool(b: Binding) -> Tool:
    """``get_directions``, bound to ``b``."""
    s = b.s

    @tool(effects="read")
    def get_directions(destination: str, origin: str = "", mode: str = "driving") -> str:
        """Make a map link with directions to a place, or showing the place when no origin is given.

        Args:
            destination: where to go, e.g. "Ferry Building, San Francisco".
            origin: where to start; empty to just show the destination.
            mode: "driving", "walking" or "cycling".

        Returns:
            the map URL.
        """
        if not destination.strip():
            raise InvalidArgument("the destination is empty; name a place", tool="get_directions")
        quote = urllib.parse.quote_plus
        if not origin.strip():
            url = s.map_search_url.format(query=quote(destination.strip()))
        else:
            provider_mode = s.map_modes.get(mode.strip().lower())
            if provider_mode is None:
                raise InvalidArgument(
                    f"unknown travel mode {mode!r}; use one of {sorted(s.map_modes)}", tool="get_directions"
                )
            url = s.map_directions_url.format(
                origin=quote(origin.strip()), destination=quote(destination.strip()), mode=quote(provider_mode)
            )
        b.open_url(url)
        return url

    return get_directions


def create_meeting_link_tool(b: Binding) -> Tool:
    """``create_meeting_link``, bound to ``b``."""
    s = b.s

    @tool(effects="read")
    def create_meeting_link(title: str) -> str:
        """Create a video meeting link.

        Args:
            title: the meeting's name.

        Returns:
            the meeting URL.
        """
        slug = re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:40] or "meeting"
        url = s.meeting_url_template.format(slug=slug, id=uuid.uuid4().hex[:8])
        b.open_url(url)
        return url

    return create_meeting_link


def tools(b: Binding) -> list[Tool]:
    """The link tools, in their stable order."""
    return [get_directions_tool(b), create_meeting_link_tool(b)]
