"""The embeddable widget's rules: site keys and their origins, visitor tokens, and the abuse limits checked before
any work (docs/widget.md, ADRs 0087-0091). The keys and counters live in the session store's backend
(widget/store/store.py); the HTTP side is api/widget.py."""
