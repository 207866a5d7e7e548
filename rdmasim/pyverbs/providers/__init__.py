"""``pyverbs.providers``: vendor extensions (direct verbs). The emulated devices are rxe-like
software devices with no vendor provider: every class here raises EOPNOTSUPP when constructed."""
