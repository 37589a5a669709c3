"""The kind descriptions shipped with megamon, one ``<name>.json`` each (docs/kinds.md)."""
