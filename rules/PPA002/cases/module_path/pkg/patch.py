"""A plugin that replaces a function of a package it imports: `pkg.layers` is a package, not the
`layers` of a model, so these reads are judged fine (no record)."""

import pkg.layers


def _norm(x):
    return x


# ok: PPA002
pkg.layers.norm = _norm


def apply(x):
    # ok: PPA002
    return pkg.layers.norm(x)
