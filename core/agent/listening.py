"""Hearing a turn's voice notes before the turn answers: fetch, bound, transcribe, store.

A voice note is stored as a flagged placeholder awaiting like any request, with the channel's
reference to its audio, so a crash loses nothing: the turn hears every waiting note up to its
request, stores each transcript and retires its note in one transaction, and answers the
newest. The audio never leaves memory. The order and the failures: docs/turn.md (Voice notes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from core.agent.gateway import Gateway
from core.agent.slots import waiting_elsewhere
from core.errors import AudioTooLarge, NodError, VoiceError
from core.message import Message, StoredMessage, VoiceNote
from core.ports import AudioSource, Messages, UnitOfWork
from core.voice import MAX_AUDIO_BYTES, MAX_TRANSCRIPT_CHARS, SILENT, TOO_BIG, UNHEARD, Audio, refusal

log = logging.getLogger("nod.agent.voice")


@dataclass(frozen=True)
class Heard:
    """What the turn answers: ``request`` (a transcript, when the request was a voice note),
    or, when the request itself could not be heard, the ``notice`` that answers it instead."""

    request: StoredMessage
    notice: str | None = None


class Listener:
    def __init__(self, gateway: Gateway, messages: Messages, uow: UnitOfWork, sources: Mapping[str, AudioSource]) -> None:
        self._gateway = gateway
        self._messages = messages
        self._uow = uow
        self._sources = dict(sources)

    async def hear(self, request: StoredMessage) -> Heard:
        """Transcribe the owner's waiting voice notes up to ``request``; what the turn should answer."""
        newest = request
        for note in await self._messages.pending_voice(request.owner_id, request.id):  # usually none: one query
            assert note.voice_note is not None
            try:
                transcript = await self._transcribed(note, note.voice_note)
            except NodError as exc:
                log.info("voice_not_heard owner=%s message=%s error=%s", note.owner_id, note.id, type(exc).__name__)
                await self._messages.drop_voice(note.id)
                if note.id == request.id:
                    return Heard(request, _sentence(exc))
                continue
            if note.id == request.id or transcript.id > newest.id:
                newest = transcript
        return Heard(newest)

    async def _transcribed(self, note: StoredMessage, voice: VoiceNote) -> StoredMessage:
        sentence = refusal(voice, self._gateway.transcribe_configured)
        if sentence is not None:  # no model any more, or a stored note past the bounds
            raise _Refused(sentence)
        source = self._sources.get(note.channel)
        if source is None:
            raise _Refused(UNHEARD)
        async with waiting_elsewhere():  # a download is waiting, not work: another turn may use the slot
            data = await source.fetch(voice, MAX_AUDIO_BYTES)
        if len(data) > MAX_AUDIO_BYTES:  # a source that did not bound its read
            raise AudioTooLarge("The voice note is larger than Nod listens to.")
        audio = Audio(data, voice.filename, voice.content_type,
                      float(voice.duration_s) if voice.duration_s is not None else None)
        transcript = await self._gateway.transcribe(note.owner_id, audio)
        del audio, data  # the sound is not kept: only its words are
        words = transcript.text.strip()
        if not words:
            raise _Refused(SILENT)
        if len(words) > MAX_TRANSCRIPT_CHARS:  # a server answering with something else than the note's words
            log.warning("voice_transcript_refused owner=%s message=%s chars=%s", note.owner_id, note.id, len(words))
            raise _Refused(UNHEARD)
        log.info("voice_heard owner=%s message=%s chars=%s", note.owner_id, note.id, len(words))
        return await self._stored(note, words)

    async def _stored(self, note: StoredMessage, words: str) -> StoredMessage:
        """The transcript stored (awaiting in the note's place) and the note retired, in one unit of work.

        Messages are only ever appended — the derived search index relies on it — so the
        transcript is a message of its own after the note's placeholder. Its external id
        makes a second transcription of the same note a no-op.
        """
        async with self._uow() as tx:
            transcript = (await tx.messages.append(Message(
                owner_id=note.owner_id, role=note.role, text=words, channel=note.channel, sent_at=note.sent_at,
                external_id=f"{note.external_id}#voice" if note.external_id else None, forwarded=note.forwarded,
                origin=note.origin, address=note.address, awaiting=True, voice=True))).message
            await tx.requests.retire(note.id)
        log.info("message_stored owner=%s message=%s role=%s channel=%s voice_of=%s secret=%s", transcript.owner_id,
                 transcript.id, transcript.role.value, transcript.channel, note.id, transcript.secret)
        return transcript


class _Refused(VoiceError):
    """A note Nod will not transcribe (here only); the message is the sentence for the owner."""


def _sentence(error: NodError) -> str:
    """Refused: its own sentence; too large once downloaded: the size; anything else (the
    channel, the model): try again."""
    if isinstance(error, _Refused):
        return str(error)
    return TOO_BIG if isinstance(error, AudioTooLarge) else UNHEARD
