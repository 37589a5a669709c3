"""History as pure functions: the append rules and the summarizer (docs/rules.md)."""
