"""Claims of the synthetic layer: each module registers its checks with the framework registry."""
