"""Runtime oracle probes (tests/oracle.py): read the scales of an early and a late listed layer."""

from types import SimpleNamespace

from pkg.model import ScaledModel

CONFIG = SimpleNamespace(num_hidden_layers=8, moe_layer_ids=[1, 6], use_scale=True)


def model():
    return ScaledModel(CONFIG, prefix="model")


def after_a_comment():
    model().scales_after_a_comment()


def under_a_key_error_handler():
    model().scales_under_a_key_error_handler()


def under_an_attribute_error_handler():
    model().scales_under_an_attribute_error_handler()


def with_hasattr():
    model().scales_with_hasattr()


def if_enabled():
    model().scales_if_enabled()


def through_a_flag():
    model().owned_scales_through_a_flag()


def through_a_flag_if_enabled():
    model().owned_scales_if_enabled()


def after_a_test():
    model().owned_scales_after_a_test()


PROBES = [after_a_comment, under_a_key_error_handler, under_an_attribute_error_handler, with_hasattr, if_enabled,
          through_a_flag, through_a_flag_if_enabled, after_a_test]
