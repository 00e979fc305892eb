"""A note's text held to the owner's words (issue 39: 7): what passes, what is refused, and why.

Each row is a note a memory model might write, the owner messages it cites (sent on
Thursday 2026-12-03 unless a row says otherwise), and the parts the server must find
ungrounded: none for a note in the owner's words however the model formatted it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from core.saving.grounding import Source, describe, find_ungrounded
from core.saving.notes import NoteProposal, Proposal, Refusal, check_note

SENT = date(2026, 12, 3)  # a Thursday

GROUNDED = [
    # (note text, cited owner messages)
    ("Sister: Ana, lives in Porto", ["my sister Ana lives in Porto"]),
    ("Sister: Ana, lives in Porto", ["my sister ana lives in porto"]),  # the owner's lower case
    ("Sister: Ana. Lives in Porto", ["my sister Ana lives in Porto"]),
    ("Owner's sister Ana lives in Porto", ["my sister Ana lives in Porto"]),
    ("Home address: Rua Augusta 10, Lisbon", ["We live at Rua Augusta 10, Lisbon"]),
    ("Delivery address: Rua Augusta 10, Lisbon", ["send it to rua augusta 10, lisbon please"]),
    ("Phone: 912 345 678", ["call me on 912345678"]),  # other spacing
    ("Phone: +351912345678", ["my number is +351 912 345 678"]),
    ("Phone: (912) 345-678", ["call me on 912 345 678"]),
    ("Brother: José", ["my brother Jose is visiting"]),  # an accent the owner wrote without: same letters
    ("Brother: Jose", ["my brother José is visiting"]),
    ("Has a cat called Miso", ["I adopted a cat called Miso"]),  # "Has" only starts the note
    ("Runs marathons", ["I run marathons"]),
    ("Prefers oat milk in coffee", ["oat milk in my coffee please, always"]),
    ("Budget for the trip: 1,200 euros", ["the trip budget is 1200 euros"]),
    ("Budget for the trip: 1200 euros", ["the trip budget is €1,200"]),
    ("Salary: 50k a year", ["I earn 50,000 a year"]),
    ("Has 2 kids", ["I have two kids"]),
    ("Dentist appointment on 2026-12-04 at 15:00", ["dentist tomorrow at 3pm"]),
    ("Dentist appointment on Friday at 3pm", ["dentist tomorrow at 3 p.m."]),
    ("Team meeting every Monday at 9:30", ["team meeting mondays 9.30am"]),
    ("Meeting with the bank at 15:00", ["meeting with the bank at 3"]),
    ("2026-12-02: Went to the dentist", ["went to the dentist yesterday"]),
    ("2026-12-03: Went to the dentist", ["just back from the dentist"]),  # the day the owner told it
    ("Anniversary: 2027-05-03", ["our anniversary is May 3rd"]),
    ("Anniversary: 3 May", ["our anniversary is 03/05"]),
    ("Moved to Braga in 2019", ["we moved to Braga in 2019"]),
    ("Email: ana.silva@example.com", ["her email is Ana.Silva@Example.com"]),
    ("Favourite bakery: https://www.padaria.pt/menu", ["I love padaria.pt/menu"]),
    ("Dr. Silva is the dentist", ["my dentist is dr silva"]),
    ("Daughter Maria starts school in September", ["maria starts school in september"]),
    ("Boat: a blue sloop named Gaivota", ["Our boat is a blue sloop named Gaivota"]),
    ("Allergic to peanuts", ["I'm allergic to peanuts"]),
    ("Runs 2h every Sunday", ["I run for 2 hours on sundays"]),
    ("Mother's birthday: 12 June", ["mum's birthday is june 12th"]),
    ("Flat in O'Connell Street", ["our flat is on o'connell street"]),
    ("Works 3-4 days a week from home", ["I work from home 3 or 4 days a week"]),
    ("In the office 4/5 days", ["I'm in the office 4 out of 5 days"]),
    ("Favourite Food: sushi", ["I love sushi"]),  # a label in Title Case
    ("Home Wi-Fi network: MyHome", ["our wifi network is myhome"]),
    ("Jean-Luc is a colleague", ["my colleague Jean Luc"]),
    ("Works for a Porto-based startup", ["I work for a startup in Porto"]),
]

UNGROUNDED = [
    # (note text, cited owner messages, the ungrounded parts as (kind, value))
    ("Owner's home address is 221B Baker Street, London", ["yes save it"],
     [("number", "221"), ("name", "B"), ("name", "Baker"), ("name", "Street"), ("name", "London")]),
    ("Home address: Rua Augusta 12, Lisbon", ["We live at Rua Augusta 10, Lisbon"], [("number", "12")]),
    ("Sister: Rita, lives in Porto", ["my sister Ana lives in Porto"], [("name", "Rita")]),
    ("Bob is the owner's brother", ["my brother is called Rob"], [("name", "Bob")]),  # an invented subject
    ("Bob's birthday is in May", ["my brother's birthday is in May"], [("name", "Bob's")]),
    ("Bob: brother", ["I have a brother"], [("name", "Bob")]),  # a name as a label
    ("Ana Silva: sister", ["I have a sister"], [("name", "Ana"), ("name", "Silva")]),
    ("Dentist: Dr. Costa", ["my dentist is dr silva"], [("name", "Costa")]),
    ("Phone: +351 912 345 678", ["call me on 912 345 678"], [("number", "351 912 345 678")]),  # a country code added
    ("Phone: 912 345 679", ["call me on 912 345 678"], [("number", "912 345 679")]),
    ("Has 3 kids", ["I have two kids"], [("number", "3")]),
    ("Budget for the trip: 12,000 euros", ["the trip budget is 1200 euros"], [("number", "12,000")]),
    ("Moved to Braga in 2018", ["we moved to Braga in 2019"], [("number", "2018")]),
    ("Dentist appointment on 2026-12-10", ["dentist tomorrow at 3pm"], [("date", "2026-12-10")]),
    ("2026-11-20: Went to the dentist", ["went to the dentist"], [("date", "2026-11-20")]),
    ("Meeting with the bank at 16:00", ["meeting with the bank at 3"], [("time", "16:00")]),
    ("Anniversary: 4 May", ["our anniversary is May 3rd"], [("date", "4 May")]),
    ("Email: ana.silva@example.org", ["her email is ana.silva@example.com"], [("email", "ana.silva@example.org")]),
    ("Bank login page: https://bank.example.com/login", ["I bank online"], [("link", "https://bank.example.com/login")]),
    ("Works at Google", ["I work at a bank"], [("name", "Google")]),
    ("Prefers Italian food", ["I love pasta"], [("name", "Italian")]),
    ("Wants to visit Tokyo in June", ["I want to go to Japan in June"], [("name", "Tokyo")]),
    ("Brother: João Pereira", ["my brother João"], [("name", "Pereira")]),
    ("Works for a Lisbon-based startup", ["I work for a startup in Porto"], [("name", "Lisbon-based")]),
    ("Flight TP1234 to Paris on Friday", ["flight to Paris on friday"], [("number", "1234"), ("name", "TP")]),
]


def _sources(*texts: str) -> list[Source]:
    return [Source(t, SENT) for t in texts]


def test_the_table_has_at_least_twenty_five_rows_each_way() -> None:
    assert len(GROUNDED) >= 25 and len(UNGROUNDED) >= 20


@pytest.mark.parametrize(("note", "cited"), GROUNDED, ids=[f"{n} <- {c[0]}" for n, c in GROUNDED])
def test_a_note_in_the_owners_words_is_grounded(note: str, cited: list[str]) -> None:
    assert find_ungrounded(note, _sources(*cited)) == ()


@pytest.mark.parametrize(("note", "cited", "missing"), UNGROUNDED, ids=[n for n, _, _ in UNGROUNDED])
def test_a_note_naming_what_the_owner_never_wrote_is_refused(note: str, cited: list[str], missing: list[tuple[str, str]]) -> None:
    assert [(m.kind, m.value) for m in find_ungrounded(note, _sources(*cited))] == missing


def test_only_cited_messages_ground_a_note() -> None:
    """The address is in the conversation, but not in the message the note cites."""
    assert find_ungrounded("Home address: Rua Augusta 10", _sources("save my address")) != ()
    assert find_ungrounded("Home address: Rua Augusta 10", _sources("save my address", "Rua Augusta 10")) == ()


def test_relative_days_count_from_the_day_the_message_was_sent() -> None:
    said = "went to the dentist yesterday"
    assert find_ungrounded("2026-12-02: Went to the dentist", [Source(said, SENT)]) == ()
    assert find_ungrounded("2026-12-02: Went to the dentist", [Source(said, date(2026, 12, 10))]) != ()
    assert find_ungrounded("2026-12-02: Went to the dentist", [Source(said)]) != ()  # no sent day: no relative date


def test_the_reason_names_at_most_three_parts() -> None:
    missing = find_ungrounded("Owner's home address is 221B Baker Street, London", _sources("yes save it"))
    assert describe(missing) == ("ungrounded: the text's number '221', name 'B', name 'Baker' and 2 more "
                                 "is not in a cited owner message")


def test_check_note_refuses_an_ungrounded_text_or_abstract_and_drops_an_invented_entity() -> None:
    cited = {7: Source("my sister Ana lives in Porto", SENT)}
    now = datetime(2026, 12, 3, 9, tzinfo=UTC)

    def proposal(**fields: object) -> NoteProposal:
        base: dict[str, object] = {"path": "people/sister", "text": "Sister: Ana, lives in Porto", "message_ids": [7],
                                   "quote": "my sister Ana lives in Porto"}
        return NoteProposal.model_validate({**base, **fields})

    kept = check_note(proposal(entities=["Ana", "Porto", "Rita Silva"]), cited, now)
    assert isinstance(kept, Proposal) and kept.entry.entities == ("Ana", "Porto")
    for refused in (proposal(text="Sister: Rita, lives in Porto"), proposal(abstract="Ana, a nurse at Hospital São João")):
        result = check_note(refused, cited, now)
        assert isinstance(result, Refusal) and result.reason.startswith("ungrounded: "), result
