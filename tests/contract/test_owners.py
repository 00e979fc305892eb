"""The Owners port: who Nod works for, found by id, name or channel identity; settings by compare-and-swap."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from core.errors import AlreadyExists, InvalidInput, NotFound
from core.owner import Identity, OwnerSettings
from tests.contract.conftest import NOW, Ports

TELEGRAM = Identity("telegram", "42")
WHATSAPP = Identity("whatsapp", "+351910000001")


async def test_an_added_owner_is_found_by_id_by_name_and_by_each_identity(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "Europe/Lisbon", (TELEGRAM, WHATSAPP), NOW)
    assert (ana.name, ana.time_zone, ana.settings, ana.created_at) == ("ana", "Europe/Lisbon", OwnerSettings(), NOW)
    assert await ports.owners.by_id(ana.id) == ana
    assert await ports.owners.by_name("ana") == ana
    assert await ports.owners.by_identity(TELEGRAM) == ana and await ports.owners.by_identity(WHATSAPP) == ana
    assert await ports.owners.identities(ana.id) == (TELEGRAM, WHATSAPP)  # in the order they were linked


async def test_a_stranger_is_none_and_an_unknown_owner_is_not_found(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (TELEGRAM,), NOW)
    assert await ports.owners.by_identity(Identity("telegram", "43")) is None
    assert await ports.owners.by_identity(Identity("whatsapp", "42")) is None  # the same id on another channel
    with pytest.raises(NotFound):
        await ports.owners.by_name("nobody")
    with pytest.raises(NotFound):
        await ports.owners.by_id(ana.id + 1)
    assert await ports.owners.identities(ana.id + 1) == ()


async def test_owners_are_listed_in_the_order_they_were_added_each_with_only_their_identities(ports: Ports) -> None:
    assert await ports.owners.all() == []
    ana = await ports.owners.add("ana", "UTC", (TELEGRAM,), NOW)
    bo = await ports.owners.add("bo", "Europe/Lisbon", (), NOW)
    cy = await ports.owners.add("cy", "UTC", (WHATSAPP,), NOW)
    assert len({ana.id, bo.id, cy.id}) == 3
    assert await ports.owners.all() == [(ana, (TELEGRAM,)), (bo, ()), (cy, (WHATSAPP,))]
    assert await ports.owners.identities(bo.id) == ()


async def test_a_taken_name_or_identity_is_refused_and_adds_nothing(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (TELEGRAM,), NOW)
    with pytest.raises(AlreadyExists):
        await ports.owners.add("ana", "UTC", (), NOW)
    with pytest.raises(AlreadyExists):
        await ports.owners.add("bo", "UTC", (WHATSAPP, TELEGRAM), NOW)
    assert await ports.owners.all() == [(ana, (TELEGRAM,))]  # no half-added bo, and WHATSAPP is nobody's
    assert await ports.owners.by_identity(WHATSAPP) is None


async def test_a_name_is_trimmed_and_must_not_be_blank_and_the_zone_must_exist(ports: Ports) -> None:
    assert (await ports.owners.add("  ana ", "UTC", (), NOW)).name == "ana"
    with pytest.raises(InvalidInput):
        await ports.owners.add("   ", "UTC", (), NOW)
    with pytest.raises(InvalidInput):
        await ports.owners.add("carl", "Mars/Olympus", (), NOW)
    assert [o.name for o, _ in await ports.owners.all()] == ["ana"]


async def test_settings_change_from_what_is_stored_and_only_for_that_owner(ports: Ports) -> None:
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    bo = await ports.owners.add("bo", "UTC", (), NOW)
    changed = await ports.owners.update_settings(ana.id, lambda s: replace(s, saving_enabled=False))
    assert changed == replace(ana, settings=replace(ana.settings, saving_enabled=False))
    assert await ports.owners.by_id(ana.id) == changed and await ports.owners.by_name("ana") == changed
    assert (await ports.owners.by_id(bo.id)).settings == OwnerSettings()
    same = await ports.owners.update_settings(ana.id, lambda s: s)  # no change: the owner as stored
    assert same == changed
    with pytest.raises(NotFound):
        await ports.owners.update_settings(bo.id + 1, lambda s: s)


async def test_two_settings_changes_at_once_both_land(ports: Ports) -> None:
    """A page switch and a spending check-in in two workers: neither undoes the other."""
    ana = await ports.owners.add("ana", "UTC", (), NOW)
    other = ports.again()
    await asyncio.gather(
        ports.owners.update_settings(ana.id, lambda s: replace(s, remember_sensitive=True)),
        other.owners.update_settings(ana.id, lambda s: replace(s, spending_limit_usd=5.0)),
        *(ports.owners.update_settings(ana.id, lambda s: replace(s, spending_raised_usd=s.spending_raised_usd + 1))
          for _ in range(5)),
    )
    settings = (await ports.owners.by_id(ana.id)).settings
    assert (settings.remember_sensitive, settings.spending_limit_usd, settings.spending_raised_usd) == (True, 5.0, 5.0)
