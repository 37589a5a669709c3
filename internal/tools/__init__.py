"""Repo-private tools that are not tests: the report screenshot and its headless browser."""
