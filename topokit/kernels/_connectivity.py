"""Structure of a matrix: symmetry, double stochasticity and connectivity of its support.

Private Numba kernels shared by the hitting-time, gap and fused kernels and by
the router (:mod:`._router`), which asks each question once per matrix.  They
never validate.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._config import NJIT_FLAGS


@njit(**NJIT_FLAGS)
def symmetric_doubly_stochastic(matrix, column_sum):
    """Exactly symmetric with every column summing to 1 within 1e-12 (the test of
    ``_hitting._hitting_times_irreducible``, summed in the same order)?"""
    n = matrix.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if matrix[i, j] != matrix[j, i]:
                return False
    for j in range(n):
        column_sum[j] = 0.0
    for i in range(n):
        for j in range(n):
            column_sum[j] += matrix[i, j]
    for j in range(n):
        if abs(column_sum[j] - 1.0) > 1e-12:
            return False
    return True


@njit(**NJIT_FLAGS)
def support_connected(matrix, seen, stack):
    """Whether the undirected support of ``matrix`` (a_ij > 0 or a_ji > 0, i != j) is connected.

    Up to 64 nodes the rows are bit masks (``stack`` holds them, symmetrised)
    and a sweep ORs the rows of the frontier; beyond, a depth-first search.
    """
    n = matrix.shape[0]
    if n <= 64:
        masks = stack.view(np.uint64)
        for i in range(n):
            masks[i] = np.uint64(0)
        for i in range(n):
            row = np.uint64(0)
            for j in range(n):
                link = np.uint64(matrix[i, j] != 0.0)
                row |= link << np.uint64(j)
                masks[j] |= link << np.uint64(i)
            masks[i] |= row
        one = np.uint64(1)
        everyone = ~np.uint64(0) if n == 64 else (one << np.uint64(n)) - one
        reached = one
        frontier = one
        while frontier != 0:
            grown = reached
            for i in range(n):
                if (frontier >> np.uint64(i)) & one:
                    grown |= masks[i]
            frontier = grown & ~reached
            reached = grown
        return reached == everyone
    for i in range(n):
        seen[i] = 0
    seen[0] = 1
    stack[0] = 0
    top = 1
    reached_count = 1
    while top > 0:
        top -= 1
        i = stack[top]
        for j in range(n):
            if seen[j] == 0 and (matrix[i, j] != 0.0 or matrix[j, i] != 0.0):
                seen[j] = 1
                stack[top] = j
                top += 1
                reached_count += 1
    return reached_count == n


@njit(**NJIT_FLAGS)
def symmetric_support(matrix):
    """Whether a_ij > 0 exactly where a_ji > 0."""
    n = matrix.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if (matrix[i, j] > 0.0) != (matrix[j, i] > 0.0):
                return False
    return True


@njit(**NJIT_FLAGS)
def reach(matrix, start, members, transpose):
    """Mark the nodes reachable from ``start`` along positive entries.

    The search is restricted to ``members``.
    """
    n = matrix.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    stack[top] = start
    top += 1
    seen[start] = True
    while top > 0:
        top -= 1
        i = stack[top]
        for j in range(n):
            if not members[j] or seen[j]:
                continue
            weight = matrix[j, i] if transpose else matrix[i, j]
            if weight > 0.0:
                seen[j] = True
                stack[top] = j
                top += 1
    return seen


@njit(**NJIT_FLAGS)
def weak_components(matrix):
    """Label the components of the undirected support of ``matrix`` (ignoring the diagonal)."""
    n = matrix.shape[0]
    labels = -np.ones(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    count = 0
    for root in range(n):
        if labels[root] >= 0:
            continue
        labels[root] = count
        top = 0
        stack[top] = root
        top += 1
        while top > 0:
            top -= 1
            i = stack[top]
            for j in range(n):
                if labels[j] < 0 and (matrix[i, j] > 0.0 or matrix[j, i] > 0.0) and i != j:
                    labels[j] = count
                    stack[top] = j
                    top += 1
        count += 1
    return labels, count


@njit(**NJIT_FLAGS)
def reaches_everyone_both_ways(matrix):
    """Whether node 0 reaches every node and every node reaches node 0 along positive entries."""
    everyone = np.ones(matrix.shape[0], dtype=np.bool_)
    return reach(matrix, 0, everyone, False).all() and reach(matrix, 0, everyone, True).all()
