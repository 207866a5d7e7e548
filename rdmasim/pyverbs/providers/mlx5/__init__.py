"""``pyverbs.providers.mlx5``: mlx5 direct verbs; not available on the emulated devices."""
