"""The derived tantivy index of the messages: history_search's fast path, rebuilt from the database."""
