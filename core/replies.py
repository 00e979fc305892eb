"""A reply as channels receive it.

A ``Reply`` is the checked text plus the choices the agent offered (a task card). Telegram
shows the choices as inline buttons; a channel without buttons, the stored conversation
and the reply check all use its text form, the choices numbered under the text. The text
is the model's Markdown, stored as written; each channel writes it in its own markup and
size limit at the edge (``core.markdown``), so what is sent never changes what is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MAX_CHOICES = 6
MAX_CHOICE_CHARS = 40
# A reply is at most this long, stored and sent: three Telegram messages, eight WhatsApp
# parts. A runaway model must not flood the owner with hundreds of messages.
MAX_REPLY_CHARS = 12_000
CUT_NOTE = "\n\n(My answer ran too long, so I cut it here. Ask me for the rest if you need it.)"


def choice_lines(choices: tuple[str, ...]) -> str:
    """The choices numbered one a line ("1. Tuesday"); "" when there are none."""
    return "\n".join(f"{n}. {choice}" for n, choice in enumerate(choices, start=1))


@dataclass(frozen=True)
class Reply:
    text: str
    choices: tuple[str, ...] = ()
    unprompted: bool = False  # Nod speaks first (a reminder), not in answer to the owner
    # sent in the channel's pre-approved form (WhatsApp's template): what is left for an
    # unprompted message once the channel's window for free-form messages has closed
    approved_form: bool = False

    def bounded(self) -> Reply:
        """At most ``MAX_REPLY_CHARS``, cut at a line or word end and saying so when longer."""
        if len(self.text) <= MAX_REPLY_CHARS:
            return self
        head = self.text[:MAX_REPLY_CHARS - len(CUT_NOTE)]
        for stop in ("\n", " "):
            at = head.rfind(stop)
            if at > len(head) // 2:
                head = head[:at]
                break
        return replace(self, text=head.rstrip() + CUT_NOTE)

    def text_form(self) -> str:
        """The text with the choices listed under it: what a reader without buttons sees."""
        if not self.choices:
            return self.text
        return f"{self.text.rstrip()}\n\n{choice_lines(self.choices)}"
