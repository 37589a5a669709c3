"""History as pure functions: the append rules and the summarizer (DESIGN §4–5)."""
