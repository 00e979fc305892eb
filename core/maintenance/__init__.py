"""The hourly memory maintenance: repair (no model), then reflect (the memory model)."""
