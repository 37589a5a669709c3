"""Pure decision rules of docs/rules.md: upness, node readiness, TPU sizing. No I/O, no clock,
no logging — callers pass ``now`` and decide what to do with a typed error."""
