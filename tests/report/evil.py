"""The class labels of the report tests' store: an attacker's ``<script>`` and a label with ``&``, quotes and ``$``."""

#: Sorted order: "<script..." < "b&...".
EVIL = "<script>window.__pwned = 1</script>"
LABELS = (EVIL, "b&\"c' $x$")
