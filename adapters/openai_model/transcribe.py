"""``Transcriber`` over ``openai.AsyncOpenAI``'s ``audio.transcriptions.create``.

``POST /v1/audio/transcriptions`` is what OpenAI serves and what local Whisper servers that
speak its API serve too, so one client does for all (``NOD_TRANSCRIBE_BASE_URL`` picks the
server). The SDK's retries stay on, since a transcription changes nothing on the server, and
its errors become ``ModelError``s as for chat. Protocol details: docs/turn.md (Voice notes).
"""

from __future__ import annotations

import logging
from typing import Any

import openai
from openai import AsyncOpenAI

from adapters.openai_model.chat import model_error, server_message
from core.errors import UnreadableAnswer
from core.voice import Audio, Transcript

log = logging.getLogger("nod.openai")


def _usage(result: Any) -> tuple[float | None, int, int]:
    usage = getattr(result, "usage", None)
    if usage is None:
        return None, 0, 0
    seconds = getattr(usage, "seconds", None)
    return (float(seconds) if isinstance(seconds, int | float) else None,
            int(getattr(usage, "input_tokens", 0) or 0), int(getattr(usage, "output_tokens", 0) or 0))


class OpenAITranscriber:
    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    async def transcribe(self, model: str, audio: Audio) -> Transcript:
        upload = (audio.filename, audio.data, audio.content_type or "application/octet-stream")
        try:
            result = await self._client.audio.transcriptions.create(model=model, file=upload, response_format="json")
        except openai.OpenAIError as exc:
            if isinstance(exc, openai.APIStatusError):
                log.warning("transcription_failed model=%s status=%s message=%r", model, exc.status_code,
                            server_message(exc))
            else:
                log.warning("transcription_failed model=%s error=%s", model, type(exc).__name__)
            raise model_error(exc) from exc
        text = getattr(result, "text", None)
        if isinstance(result, str) or not isinstance(text, str):  # JSON was asked for: a page or a number is not words
            log.warning("transcription_unreadable model=%s", model)
            raise UnreadableAnswer("The transcription server did not answer with a transcript.")
        seconds, tokens_in, tokens_out = _usage(result)
        return Transcript(text, model, seconds, tokens_in, tokens_out)

    async def close(self) -> None:
        await self._client.close()
