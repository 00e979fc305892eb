"""The OwnerLocks port: maintenance's per-owner try-lock, so one owner's tick never overlaps itself."""

from __future__ import annotations

from tests.contract.conftest import NOW, Ports


async def test_a_held_owner_is_refused_others_are_not_and_a_release_frees_it(ports: Ports) -> None:
    ana = (await ports.owners.add("ana", "UTC", (), NOW)).id
    bo = (await ports.owners.add("bo", "UTC", (), NOW)).id
    async with ports.locks.hold(ana) as first:
        assert first
        async with ports.locks.hold(ana) as second:
            assert not second  # a try-lock: busy, so skipped, not waited for
        async with ports.locks.hold(bo) as other:
            assert other
        async with ports.locks.hold(ana) as third:
            assert not third  # the refused hold released nothing
    async with ports.locks.hold(ana) as again:
        assert again
