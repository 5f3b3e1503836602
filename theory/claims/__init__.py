"""Claims of the theory layer: each module registers its checks with the framework registry."""
