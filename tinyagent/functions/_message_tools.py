"""Text messages through the configured transport (an outbox folder by default)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._tools import Tool, ToolContext, tool
from ._binding import Binding
from ._errors import InvalidArgument

__all__ = ["tools"]

_PHONE = re.compile(r"^\+?[\d\s().\-/]{5,}$")


def send_message_tool(b: Binding) -> Tool:
    """``send_message``, bound to ``b``."""
    s = b.s

    @tool(effects="outgoing")
    async def send_message(ctx: ToolContext, recipients: Sequence[str], text: str) -> dict[str, Any]:
        """Send a text message.

        Args:
            recipients: phone numbers.
            text: the message.

        Returns:
            where the message was delivered.
        """
        import asyncio

        if not recipients:
            raise InvalidArgument("send_message needs at least one recipient", tool="send_message")
        if not text.strip():
            raise InvalidArgument("the message text is empty", tool="send_message")
        numbers = [
            r.strip() if _PHONE.match(r.strip()) or "@" in r else b.phone_of(r, "send_message") for r in recipients
        ]
        transport = s.transport()
        if transport.outgoing:
            await ctx.confirm(f"send a message to {', '.join(numbers)}", recipients=numbers, text=text)
        from ._errors import DeliveryError

        try:
            where = await asyncio.to_thread(transport.send, numbers, text)
        except Exception as exc:  # noqa: BLE001 - any transport failure is a delivery error
            raise DeliveryError(f"the message transport failed: {type(exc).__name__}: {exc}",
                                tool="send_message") from exc
        return {"to": numbers, "status": "sent" if transport.outgoing else "queued in outbox", "id": where}

    return send_message


def tools(b: Binding) -> list[Tool]:
    """The message tools, in their stable order."""
    return [send_message_tool(b)]
