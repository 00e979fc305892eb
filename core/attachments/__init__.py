"""Photos and documents the owner sends: references, bounds, reading them in the turn."""
