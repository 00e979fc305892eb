"""The agent's tools, each a plain async function over the stores."""
