"""Nod's own aiohttp web server: health, (later) the memory page, API and webhooks."""
