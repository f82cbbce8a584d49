"""The runtime report's wording: each construct's own fix, and a stopped run's held events (no TensorFlow)."""

from __future__ import annotations

import pytest

from graphguard.runtime.fixes import fix_for
from graphguard.runtime.report import GuardReport, GuardStats, Growth, OpGroup, SourceLine


def group(call, *op_types, line=10):
    return OpGroup(tuple((t, 1) for t in op_types), (SourceLine("/work/train.py", line, "x = ...", call),))


@pytest.mark.parametrize(
    "call, op_types, construct, code",
    [
        ("tf.train.Saver", ("Const", "SaveV2"), "Saver", "GG102"),
        ("tf.compat.v1.train.Saver", ("Const",), "Saver", "GG102"),
        ("saver_lib.Saver", ("Const", "SaveV2", "RestoreV2"), "Saver", "GG102"),  # aliased: the op types tell
        ("tf.assign", ("Const", "AssignVariableOp"), "assign", "GG104"),
        ("tf.global_variables_initializer", ("NoOp",), "initializer", "GG103"),
        ("tf.constant", ("Const",), "constant", "GG105"),
        ("tf.placeholder", ("Placeholder",), "placeholder or variable", "GG107"),
        ("tf.reduce_mean", ("Mean",), "op", "GG101"),
        (None, ("Mul",), "operator", "GG106"),  # loss * 2: no call on the line
        ("tf.summary.scalar", ("ScalarSummary",), "summary", "GG110"),
        # A method of an optimizer: an op per step, though its slots' ops are Assign (a new user's trial)
        ("opt.minimize", ("Const", "AssignVariableOp", "ResourceApplyAdam"), "op", "GG101"),
        ("tf.train.AdamOptimizer().minimize", ("Assign", "ApplyAdam"), "op", "GG101"),
        ("v.assign", ("Const", "AssignVariableOp"), "assign", "GG104"),
    ],
)
def test_each_construct_gets_the_linters_advice(call, op_types, construct, code):
    fix = fix_for(group(call, *op_types))
    assert (fix.construct, fix.code) == (construct, code)
    from graphguard.rules import RULES

    assert fix.advice == RULES[code].ADVICE


def _report(stopped):
    event = Growth(3, 3, 1, 2, (group("tf.reduce_sum", "Const", "Sum", line=8),))
    stats = GuardStats(steps=3, ops=20, ops_added_per_step=0.5, step_seconds=None, rss_bytes=None, rss_growth_bytes=None)
    return GuardReport("count", 2, stats, (), 0, 0, (), stopped=stopped, one_off=(event,), min_growth_steps=2)


def test_a_run_stopped_before_growth_was_confirmed_does_not_call_it_tolerated():
    # Regression (issue 12, item 7): an RSS stop at the first growth event printed "one-off (tolerated)".
    text = str(_report("RssGrowthError at step 3"))
    assert "tolerated" not in text and "no growth confirmed before the run was stopped" in text
    assert "the run was stopped before min_growth_steps=2 steps could confirm growth" in text
    assert "fix for" in text and "(op, GG101)" in text
    # ... and only if they repeat: an op built once on first use looks the same (issue 39's trial)
    assert "  if these lines build ops on every step (not once, on first use), then:\n  fix for" in text
    assert "one-off (tolerated" in str(_report(None))  # a run that went on: the held event was a one-off


def test_a_trial_that_keeps_no_object_is_not_told_to_clear_its_session():
    # A second new user's trial: a sweep that already called clear_session() per model, flagged by its
    # RSS trend, was told "call keras.backend.clear_session() per trial".
    from graphguard.runtime.sweep_report import TrialRecord

    rss_only = TrialRecord(5, "lr=0.1", 1.0, 100 << 20, 117 << 20, (), None, False, True, ("RSS rose",))
    assert "No object of the trial stayed alive" in rss_only.message() and "clear_session() per trial" not in rss_only.message()


def test_a_session_used_on_after_the_stop_is_said_to_have_run_on_and_its_later_one_offs_are_tolerated():
    # A second new user's trial: a notebook's fixed cell ran ten more steps on the stopped session; the
    # report said "stopped at step 3" and called the fixed cell's op-built-once unconfirmed growth.
    event = Growth(3, 3, 1, 2, (group("tf.reduce_sum", "Const", "Sum", line=8),))
    stats = GuardStats(steps=13, ops=20, ops_added_per_step=0.1, step_seconds=None, rss_bytes=None, rss_growth_bytes=None)
    text = str(GuardReport("count", 2, stats, (), 0, 0, (), stopped="GraphGrowthError at step 3", one_off=(event,),
                           min_growth_steps=2))
    assert "one-off (tolerated" in text and "could confirm growth" not in text and "fix for" not in text
    assert text.endswith("stopped by GraphGrowthError at step 3; the session ran on to step 13")
