"""Synthetic experiments: separable data, exact SVMs (cvxpy), GD-trained heads, LOO stability."""
