"""Claims of the plm layer: each module registers its checks with the framework registry."""
