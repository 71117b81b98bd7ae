"""A small src-layout project whose tests build loaders with ``num_workers=0`` only."""
