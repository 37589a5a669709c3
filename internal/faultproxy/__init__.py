"""Fault-injecting HTTP/1.1 reverse proxy for testing Cloud Storage error handling.

See :mod:`internal.faultproxy.proxy` for the server and :mod:`internal.faultproxy.rules`
for the rule and request-log types.
"""

from internal.faultproxy.proxy import FaultProxy
from internal.faultproxy.rules import Action, RequestRecord, Rule

__all__ = ["Action", "FaultProxy", "RequestRecord", "Rule"]
