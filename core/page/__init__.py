"""Settings → Memory: who may open the owner's page, what it shows, what it changes."""
