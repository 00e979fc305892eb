"""``nod owners``: add, link, unlink, list, rename and remove owners.

Removing an owner is the operator's "delete everything about this person": their messages,
memory, identities, page sessions, Gmail connection and usage go in one transaction
(adapters.storage.owner_store), so a failure leaves all of it and never half. It asks first on
a terminal; anywhere else (a script, a pipe) it needs ``--yes``, so an unattended typo can
never delete someone.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from typing import TextIO

from adapters.storage.database import sqlite_file
from bot.wiring import Services
from core.errors import InvalidInput
from core.owner import Identity


async def owners_add(svc: Services, name: str, links: tuple[Identity, ...], tz: str) -> str:
    owner = await svc.owners.add(name, tz, links, svc.clock.now())
    return f"Added owner {owner.name} (id {owner.id}, {owner.time_zone})."


async def owners_link(svc: Services, name: str, links: tuple[Identity, ...]) -> str:
    owner = await svc.owners.by_name(name)
    if not links:
        raise InvalidInput("Name at least one --link CHANNEL:ID (or --telegram ID, --whatsapp +NUMBER) to link.")
    for link in links:
        await svc.owners.link(owner.id, link)
    return f"Linked {', '.join(f'{i.channel}:{i.external_id}' for i in links)} to {owner.name}."


async def owners_unlink(svc: Services, name: str, links: tuple[Identity, ...]) -> str:
    owner = await svc.owners.by_name(name)
    if len(links) != 1:
        raise InvalidInput("Name exactly one --link CHANNEL:ID (or --telegram ID, --whatsapp +NUMBER) to unlink.")
    await svc.owners.unlink(owner.id, links[0])
    return f"Unlinked {links[0].channel}:{links[0].external_id} from {owner.name}."


async def owners_list(svc: Services, as_json: bool = False) -> str:
    owners = await svc.owners.all()
    if as_json:
        return json.dumps([{"name": o.name, "time_zone": o.time_zone, "created_at": o.created_at.isoformat(),
                            "identities": [{"channel": i.channel, "external_id": i.external_id} for i in links]}
                           for o, links in owners], ensure_ascii=False, indent=2)
    lines = []
    for owner, links in owners:
        linked = ", ".join(f"{i.channel}:{i.external_id}" for i in links) or "no channels"
        lines.append(f"{owner.name}\t{owner.time_zone}\t{linked}")
    return "\n".join(lines) if lines else "No owners yet; add one with `nod owners add NAME`."


async def owners_rename(svc: Services, old: str, new: str) -> str:
    owner = await svc.owners.by_name(old)
    await svc.owners.rename(owner.id, new)
    return f"Renamed {owner.name} to {new.strip()}."


def _confirmed(name: str, stdin: TextIO) -> bool:
    if not stdin.isatty():
        raise InvalidInput(f"Removing {name} deletes everything of theirs; standard input is not a terminal, "
                           "so add --yes to confirm.")
    print(f"Remove {name} and delete all their messages, memory, identities and sessions? Type the name to confirm: ",
          end="", flush=True)
    return stdin.readline().strip() == name


async def owners_remove(svc: Services, name: str, yes: bool, stdin: TextIO) -> str:
    owner = await svc.owners.by_name(name)
    if not yes and not _confirmed(owner.name, stdin):
        raise InvalidInput(f"Nothing removed: the name typed was not {owner.name}.")
    counts = await svc.owners.remove(owner.id)
    said = f"Removed {owner.name}: {counts['messages']:,} messages, their memory, {counts['identities']} identities, " \
           f"{counts['page_sessions']} page sessions and {counts['usage']:,} usage rows."
    if counts.get("gmail_connections"):  # the token is gone here; Google's grant is the owner's to revoke
        said += (" Their Gmail token was deleted; Google still lists Nod's access until it is removed at "
                 "https://myaccount.google.com/permissions (`nod gmail disconnect` before removing revokes it).")
    return said + _forget_search_index(svc)


def _forget_search_index(svc: Services) -> str:
    """The derived search index holds words of the removed messages: delete it (it is rebuilt from
    the database) when no ``nod run`` uses it, or say how."""
    index = svc.search_index
    if index is None or not index.directory.exists():
        return ""
    database = sqlite_file(str(svc.engine.url))
    lock = database.with_name(database.name + ".run.lock") if database is not None else None
    if lock is not None:
        with open(lock, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no nod run serves this file now
            except BlockingIOError:
                pass
            else:
                shutil.rmtree(index.directory, ignore_errors=True)
                return " The search index was deleted too; it is rebuilt from the database on the next search."
    return (f" The search index {index.directory} still holds words of theirs: stop nod run, delete that folder "
            "and start it again (it is rebuilt from the database).")
