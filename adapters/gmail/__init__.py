"""Gmail for the writing style: Google's OAuth flow (``oauth``) and the sent mail (``mail``)."""
