"""One exception tree for everything Nod refuses or fails to do.

Every error carries a sentence meant for a person (the CLI prints it, a tool result carries
it to the agent); none of them is a bug report. The tree, drawn whole: docs/architecture.md
(Errors).
"""


class NodError(Exception):
    """Base of every error Nod raises on purpose; ``str(err)`` is one sentence."""


class InvalidInput(NodError):
    """The caller asked for something malformed; asking again the same way fails again."""


class MemoryLimitError(InvalidInput):
    """A memory entry broke one of the document's limits (area, slug, lengths)."""


class SecretRefused(MemoryLimitError):
    """A note's path, text, abstract or quote (or a skill) holds a card number, key or login link."""


class NotFound(NodError):
    """The owner, note, message or path named does not exist."""


class Conflict(NodError):
    """The request collides with what is stored."""


class AlreadyExists(Conflict):
    """A name or path is already taken."""


class StaleWrite(Conflict):
    """A compare-and-swap kept losing to newer writers; nothing was overwritten."""


class EditedElsewhere(Conflict):
    """An edit named a version of a note that is no longer the stored one; ``current`` is what is."""

    def __init__(self, message: str, current: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.current = current


class MemoryFull(NodError):
    """The memory document would not fit in 256 KiB even with the archive trimmed."""

    def __init__(self, message: str = "Memory is full.") -> None:
        super().__init__(message)


class ConfigError(NodError):
    """A setting is missing or malformed; the sentence names the variable."""


class StorageError(NodError):
    """The database could not be reached or gave an answer Nod cannot use."""


class IndexFailure(StorageError):
    """The derived search index could not answer; callers fall back to the database's index."""


class ModelError(NodError):
    """A model gave no usable answer; the sentence says why without quoting the answer."""


class ModelUnavailable(ModelError):
    """The model server could not be reached, was overloaded or answered too slowly."""


class ModelTimeout(ModelUnavailable):
    """The call's deadline passed before the model answered."""


class ModelRefused(ModelError):
    """The model server refused the request: a bad key, an unknown model, a bad input."""


class UnreadableAnswer(ModelError):
    """The model's answer was not the JSON asked for (or not JSON at all)."""


class ModelDeclined(ModelRefused):
    """The model answered with a refusal instead of an answer; asking the same again is pointless."""


class AnswerCut(ModelError):
    """The answer stopped at the token limit: asking the same again would stop there again."""


class MailError(NodError):
    """Google's OAuth or Gmail API could not be reached or answered badly; the sentence names no mail content."""


class MailAccessLost(MailError):
    """The owner's Gmail grant is expired or revoked: only connecting again helps, so the page says reconnect."""


class VoiceError(NodError):
    """A voice note could not be listened to; the owner is told in one sentence."""


class AudioTooLarge(VoiceError):
    """The audio is over the size or duration Nod transcribes (``core.voice``)."""


class AudioUnavailable(VoiceError):
    """The channel could not hand over the audio (gone, refused, unreachable)."""


class AttachmentError(NodError):
    """A photo or document could not be read; the owner is told in one sentence (``core.attachments``)."""


class AttachmentTooLarge(AttachmentError):
    """Over the bytes, pixels or pages Nod reads (declared by the platform or found when read)."""


class AttachmentUnavailable(AttachmentError):
    """The channel could not hand the file over (gone, refused, unreachable, not the channel's address)."""


class DeliveryFailed(NodError):
    """A channel gave up delivering a reply; ``code`` is the platform's error code, if any."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
