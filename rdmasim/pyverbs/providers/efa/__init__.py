"""``pyverbs.providers.efa``: EFA direct verbs; not available on the emulated devices."""
