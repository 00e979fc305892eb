"""The Keys port: the cursor signing key, made with the storage and the same for every worker on it."""

from __future__ import annotations

import pytest

from core.errors import StorageError
from tests.contract.conftest import Ports


async def test_the_signing_key_is_32_bytes_and_the_same_for_every_reader(ports: Ports) -> None:
    key = await ports.keys.key("signing_key")
    assert isinstance(key, bytes) and len(key) == 32
    assert await ports.keys.key("signing_key") == key
    assert await ports.again().keys.key("signing_key") == key  # a cursor signed by one worker is read by another


async def test_a_key_the_storage_never_made_is_an_error_not_a_new_key(ports: Ports) -> None:
    with pytest.raises(StorageError):
        await ports.keys.key("no_such_key")
