"""The message before a strong match, as a candidate of its own ("matched by the next message").

A reply repeats the words of what it answers, while the message before it, which says what
happened, may hold none of them. The index finds a message by its own words and the previous
message's; this adds the other direction for the best PRECEDING_FROM matches, and only
messages that match no query word. Example and measurements: docs/search.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.history.scope import Hit, Scope
from core.message import StoredMessage
from core.ports import Matcher, Messages, Neighbours, Placed

PRECEDING_FROM = 10  # the best matches (backend order) whose previous message may join



def _admitted(message: StoredMessage, scope: Scope) -> bool:
    """Within the searched thread, snapshot and dates (the matchers test the same)."""
    sent = message.sent_at
    return (
        message.thread_id == scope.thread_id and message.id <= scope.snapshot and message.role.value != "tool"
        and (scope.start is None or sent >= scope.start)
        and all(upper is None or sent < upper for upper in (scope.end, scope.before))
    )


async def preceding(
    database: Neighbours, messages: Messages, matcher: Matcher, scope: Scope, terms: Sequence[str],
    hits: Sequence[Hit],
) -> list[Hit]:
    """Hits for the messages just before the best ``hits`` that match no query word, by id.

    Each carries its place (``seq``) one before its match's when the match knows its own,
    so re-ranking finds the pair adjacent without asking the database again. The derived
    index answers this from its own fields (no round trip); the database's index by
    neighbours, a match test and the rows.
    """
    best = hits[:PRECEDING_FROM]
    held = {h.id for h in hits}
    if isinstance(matcher, Placed) and all(h.seq is not None for h in best):
        places = sorted({h.seq - 1 for h in best if h.seq})  # place 0 has none before it
        found = await matcher.at_places(terms, scope, places)
        return sorted((hit for hit, matches in found if not matches and hit.id not in held), key=lambda h: h.id)
    return await _from_database(database, messages, matcher, scope, terms, best, held)


async def _from_database(
    database: Neighbours, messages: Messages, matcher: Matcher, scope: Scope, terms: Sequence[str],
    best: Sequence[Hit], held: set[int],
) -> list[Hit]:
    near = await database.neighbours(scope.thread_id, [h.id for h in best], 1)
    before: dict[int, Hit] = {}
    for hit in best:
        found = near.get(hit.id, (None,))[0]
        if found is not None and found not in held and found not in before:
            before[found] = hit
    if not before:
        return []
    matching = await matcher.which_match(terms, scope, sorted(before))
    read = await messages.get_many([i for i in before if i not in matching])
    added = []
    for message_id, message in sorted(read.items()):
        if message_id in matching or not _admitted(message, scope):
            continue
        after = before[message_id]
        seq = after.seq - 1 if after.seq is not None else None
        role = "owner" if message.role.value == "owner" else "assistant"
        added.append(Hit(message_id, role, message.text, 0.0, message.sent_at, None, seq))
    return added
