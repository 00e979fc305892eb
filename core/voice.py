"""Voice notes: the bounds Nod listens within, the sentences it answers with, the two ports.

The audio is held in memory only while it is transcribed; the bounds are checked before
anything is downloaded, so a refusal costs nothing. Details: docs/turn.md, "Voice notes".
"""

from __future__ import annotations

from dataclasses import dataclass

from core.message import VoiceNote

MAX_AUDIO_BYTES = 20 * 1024 * 1024
MAX_AUDIO_SECONDS = 10 * 60
# ten minutes of speech is about 1,500 words (9,000 characters); far more is not a transcript
MAX_TRANSCRIPT_CHARS = 30_000
# Opus voice notes run at about 16 kbit/s: how long a note is when no one said
# (WhatsApp), so its usage row is still priced; the row is marked estimated.
ESTIMATED_BYTES_PER_SECOND = 2_000

CANNOT_LISTEN = ("I can't listen to voice notes yet (the operator turns them on with NOD_TRANSCRIBE_MODEL), "
                 "so please write to me instead.")
TOO_LONG = (f"That voice note is too long for me: I listen to notes of up to {MAX_AUDIO_SECONDS // 60} minutes, "
            "so please send a shorter one or write it down.")
TOO_BIG = (f"That voice note is too large for me: I listen to files of up to {MAX_AUDIO_BYTES // (1024 * 1024)} MB, "
           "so please send a shorter one or write it down.")
UNHEARD = "I couldn't listen to that voice note just now, so please send it again or write it down."
SILENT = "I couldn't make out any words in that voice note, so please send it again or write it down."
PLACEHOLDER = "[sent a voice message]"

# What OpenAI's endpoint accepts, by ending; a local Whisper server decodes with ffmpeg and takes these too.
_ENDINGS = {
    "audio/ogg": "ogg", "audio/opus": "ogg", "audio/oga": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3",
    "audio/mp4": "m4a", "audio/m4a": "m4a", "audio/x-m4a": "m4a", "audio/aac": "m4a", "audio/wav": "wav",
    "audio/x-wav": "wav", "audio/webm": "webm", "audio/flac": "flac", "audio/amr": "amr",
}
_KNOWN_ENDINGS = frozenset({"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"})


@dataclass(frozen=True)
class Audio:
    """A voice note's bytes, in memory only, with what the transcription server needs to read them."""

    data: bytes
    filename: str
    content_type: str | None = None
    duration_s: float | None = None  # declared by the platform; else the server's, else an estimate


@dataclass(frozen=True)
class Transcript:
    text: str
    model: str = ""
    seconds: float | None = None  # the audio's length as the server reported it (OpenAI's usage), if it did
    tokens_in: int = 0
    tokens_out: int = 0



def refusal(note: VoiceNote, can_listen: bool) -> str | None:
    """The one sentence that answers a voice note Nod will not transcribe, or None to transcribe it."""
    if not can_listen:
        return CANNOT_LISTEN
    if note.duration_s is not None and note.duration_s > MAX_AUDIO_SECONDS:
        return TOO_LONG
    if note.size_bytes is not None and note.size_bytes > MAX_AUDIO_BYTES:
        return TOO_BIG
    return None


def upload_name(content_type: str | None, given: str | None = None) -> str:
    """``voice.ogg`` and the like: the name the audio is uploaded under.

    OpenAI reads the format from the ending and refuses Telegram's ``.oga`` for OGG Opus,
    so a name the platform gave is kept only when its ending is one the endpoint knows.
    """
    if given and "." in given and given.rsplit(".", 1)[1].lower() in _KNOWN_ENDINGS:
        return given
    base = (content_type or "").split(";", 1)[0].strip().lower()
    return f"voice.{_ENDINGS.get(base, 'ogg')}"


def audio_seconds(audio: Audio, transcript: Transcript | None) -> tuple[float, bool]:
    """How long the audio is, for its price, and whether that is an estimate."""
    if audio.duration_s is not None:
        return audio.duration_s, False
    if transcript is not None and transcript.seconds is not None:
        return transcript.seconds, False
    return len(audio.data) / ESTIMATED_BYTES_PER_SECOND, True
