"""A call of a sibling tool (the same required parameters) becomes the one whose verb the request says
(tinyagent/run/_siblings.py), read from a made-up registry's descriptions."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._siblings import swap_siblings

PRE = "This tool belongs to the file system, which allows users to move, copy and delete files. Tool description: "


def _tools() -> ToolRegistry:
    two = {"source": TEXT, "destination": TEXT}
    return ToolRegistry.from_openai([
        openai_fn("cp", PRE + "Copy a file or directory from one location to another.", two, ["source", "destination"]),
        openai_fn("mv", PRE + "Move a file or directory from one location to another.", two, ["source", "destination"]),
        openai_fn("rm", PRE + "Remove a file.", {"file_name": TEXT}, ["file_name"]),
        openai_fn("cat", PRE + "Display the contents of a file.", {"file_name": TEXT}, ["file_name"]),
    ])


def test_the_request_s_verb_picks_the_sibling() -> None:
    tools = _tools()
    plan = Plan(calls=(Call(1, "cp", {"source": "report.pdf", "destination": "temp"}),))
    swapped, notes = swap_siblings(plan, tools, "Move 'report.pdf' to the temp directory")
    assert swapped.calls == (Call(1, "mv", {"source": "report.pdf", "destination": "temp"}),) and notes
    assert swap_siblings(plan, tools, "Copy report.pdf into temp")[0] == plan  # its own verb
    both = "Make a backup by moving a copy of report.pdf to temp"
    assert swap_siblings(plan, tools, both)[0] == plan  # the request says its verb too
    assert swap_siblings(plan, tools, "Put report.pdf in temp")[0] == plan  # neither verb


def test_one_parameter_tools_and_a_sibling_already_called_stay() -> None:
    tools = _tools()
    read = Plan(calls=(Call(1, "cat", {"file_name": "a.txt"}),))
    assert swap_siblings(read, tools, "Remove a.txt")[0] == read  # one parameter: too many tools share it
    pair = Plan(calls=(Call(1, "cp", {"source": "a", "destination": "b"}),
                       Call(2, "mv", {"source": "c", "destination": "d"})))
    assert swap_siblings(pair, tools, "Move c to d and keep a in b")[0] == pair


def test_a_number_given_in_another_converters_unit_takes_that_converter() -> None:
    num = {"type": "number"}
    tools = ToolRegistry.from_openai([
        openai_fn("gallon_to_liter", "Converts the gallon to liter.", {"gallon": num}, ["gallon"]),
        openai_fn("liter_to_gallon", "Converts the liter to gallon.", {"liter": num}, ["liter"]),
        openai_fn("fill_tank", "Fills the fuel tank.", {"amount": num}, ["amount"]),
    ])
    plan = Plan(calls=(Call(1, "gallon_to_liter", {"gallon": 20.0}),))
    swapped, notes = swap_siblings(plan, tools, "Convert 20 liters of gasoline into gallons")
    assert swapped.calls == (Call(1, "liter_to_gallon", {"liter": 20.0}),) and notes
    assert swap_siblings(plan, tools, "How many liters are 20 gallons?")[0] == plan  # its own unit
    fill = Plan(calls=(Call(1, "fill_tank", {"amount": 30.0}),))
    assert swap_siblings(fill, tools, "Refuel it with 30 gallons")[0] == fill  # not a converter


def test_an_unasked_action_on_what_an_asked_one_acts_on_goes_with_its_lookup() -> None:
    from tinyagent.run._siblings import drop_unasked_twins

    addresses = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses."}
    tools = ToolRegistry.from_openai([
        openai_fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        openai_fn("mail_reply", "Sends a reply to an existing e-mail.", {"match": TEXT, "body": TEXT},
                  ["match", "body"]),
        openai_fn("mail_forward", "Forwards an existing e-mail.", {"match": TEXT, "to": addresses}, ["match", "to"]),
        openai_fn("event", "Adds an event to the calendar.", {"title": TEXT}, ["title"]),
    ])
    plan = Plan(calls=(Call(1, "who", {"name": "Mia"}),
                       Call(2, "mail_forward", {"match": "Coach Rivera", "to": [Ref(1)]}),
                       Call(3, "event", {"title": "Game"}),
                       Call(4, "mail_reply", {"match": "Coach Rivera", "body": "Mia can make it."})))
    request = "Reply to Coach Rivera's email saying Mia can make Saturday's game, and add the game to my calendar"
    kept, notes = drop_unasked_twins(plan, tools, request)
    assert [c.name for c in kept.calls] == ["event", "mail_reply"] and notes
    both = request + ", and forward it to Mia"
    assert drop_unasked_twins(plan, tools, both)[0] == plan  # the request asks for the forward too
    other = Plan(calls=(*plan.calls[:3], Call(4, "mail_reply", {"match": "Dentist", "body": "Yes."})))
    assert drop_unasked_twins(other, tools, request)[0] == other  # another e-mail


def test_a_file_name_passed_to_the_folder_tool_goes_to_the_file_tool_of_the_same_verb() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("mkdir", PRE + "Create a new directory.", {"dir_name": TEXT}, ["dir_name"]),
        openai_fn("touch", PRE + "Create a new file.", {"file_name": TEXT}, ["file_name"]),
        openai_fn("rm", PRE + "Remove a file.", {"file_name": TEXT}, ["file_name"]),
    ])
    plan = Plan(calls=(Call(1, "mkdir", {"dir_name": "Notes2023.txt"}),))
    swapped, notes = swap_siblings(plan, tools, "Set up a new file called 'Notes2023.txt'")
    assert swapped.calls == (Call(1, "touch", {"file_name": "Notes2023.txt"}),) and notes
    folder = Plan(calls=(Call(1, "mkdir", {"dir_name": "Archive"}),))
    assert swap_siblings(folder, tools, "Make a folder Archive")[0] == folder  # a folder's name
