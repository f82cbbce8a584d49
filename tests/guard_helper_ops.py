"""A helper module for tests/test_guard.py: builds an op one call away from the loop.

Count mode must attribute the new ops to the line below, not to the test that calls it.
"""

import tensorflow.compat.v1 as tf


def mean_of(x):
    return tf.reduce_mean(x)  # HELPER-LEAK
