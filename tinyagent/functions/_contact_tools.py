"""Contact lookups: a person's email address or phone number by name."""

from __future__ import annotations

from .._tools import Tool, tool
from ._binding import Binding

__all__ = ["tools"]


def get_email_address_tool(b: Binding) -> Tool:
    """``get_email_address``, bound to ``b``."""

    @tool(effects="read")
    def get_email_address(name: str) -> str:
        """Look up a contact's email address by name.

        Args:
            name: the person's name as the user said it, e.g. "Sid" or "Alex Chen".

        Returns:
            the email address.
        """
        return b.email_of(name, "get_email_address")

    return get_email_address


def get_phone_number_tool(b: Binding) -> Tool:
    """``get_phone_number``, bound to ``b``."""

    @tool(effects="read")
    def get_phone_number(name: str) -> str:
        """Look up a contact's phone number by name.

        Args:
            name: the person's name as the user said it.

        Returns:
            the phone number.
        """
        return b.phone_of(name, "get_phone_number")

    return get_phone_number


def tools(b: Binding) -> list[Tool]:
    """The contact tools, in their stable order."""
    return [get_email_address_tool(b), get_phone_number_tool(b)]
