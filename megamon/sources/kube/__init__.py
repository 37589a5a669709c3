"""Kubernetes input: label keys, projections of raw objects, and the watch cache."""
