"""Telegram through python-telegram-bot: polling or a webhook on Nod's own web server."""
