"""One message per person where the sender takes one recipient (tinyagent.run._each), on a made-up registry."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._each import send_to_each

WHO = {"who": {**TEXT, "description": "The person's name."}}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("mobile_of", "Returns the person's mobile number.", WHO, ["who"]),
        openai_fn("sms_one", "Sends one SMS to a single mobile number. To text several people, send one each.",
                  {"number": {**TEXT, "description": "The mobile phone number, as returned by mobile_of."},
                   "text": TEXT}, ["number", "text"]),
        openai_fn("sms_many", "Sends an SMS.", {"numbers": {"type": "array", "items": {"type": "string"},
                                                            "description": "Mobile phone numbers."},
                                                "text": TEXT}, ["numbers", "text"]),
    ])


def test_each_unused_lookup_gets_its_own_copy_of_a_one_recipient_message() -> None:
    request = "text Jun and Marisol that standup moves to 9:30"
    plan = Plan(calls=(Call(1, "mobile_of", {"who": "Jun"}), Call(2, "mobile_of", {"who": "Marisol"}),
                       Call(3, "sms_one", {"number": Ref(1), "text": "Standup moves to 9:30."})))
    sent, notes = send_to_each(plan, _tools(), request)
    assert [c.name for c in sent.calls] == ["mobile_of", "mobile_of", "sms_one", "sms_one"] and notes
    assert sent.calls[3].args == {"number": Ref(2), "text": "Standup moves to 9:30."}
    # a sender that takes a list, or a lookup of someone the request never names, is left alone
    many = Plan(calls=(*plan.calls[:2], Call(3, "sms_many", {"numbers": [Ref(1)], "text": "x"})))
    assert send_to_each(many, _tools(), request) == (many, [])
    stray = Plan(calls=(plan.calls[0], Call(2, "mobile_of", {"who": "Bob"}), plan.calls[2]))
    assert send_to_each(stray, _tools(), request) == (stray, [])
