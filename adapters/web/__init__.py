"""Nod's own aiohttp web server: health, the channels' webhooks, the memory page and its API, Google's OAuth redirect."""
