"""A small downstream library: a dataset and the loaders its users build."""
